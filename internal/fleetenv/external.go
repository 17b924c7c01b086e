package fleetenv

import (
	"fmt"
	"os"
	"slices"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// ControllerConfig returns a copy of the config of the controller's user
// (ControllerUser, bound to the chart's ClusterRole), for a controller run
// outside this process (Options.ExternalController).
func (e *Env) ControllerConfig() *rest.Config {
	return rest.CopyConfig(e.controllerCfg)
}

// StepServerEnv returns the environment the step server is configured from
// (address, signing key file, Pod namespace) as KEY=VALUE pairs, sorted, for
// a controller process started outside this one.
func (e *Env) StepServerEnv() []string {
	out := make([]string, 0, len(e.stepEnv))
	for k, v := range e.stepEnv {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

// WriteKubeconfig writes a kubeconfig for cfg to path (mode 0600). cfg must
// authenticate with a client certificate or a bearer token held in memory,
// as envtest's users do.
func WriteKubeconfig(cfg *rest.Config, path string) error {
	const name = "fleetenv"
	kc := clientcmdapi.NewConfig()
	kc.Clusters[name] = &clientcmdapi.Cluster{
		Server:                   cfg.Host,
		CertificateAuthorityData: cfg.CAData,
		CertificateAuthority:     cfg.CAFile,
		InsecureSkipTLSVerify:    cfg.Insecure,
	}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{
		ClientCertificateData: cfg.CertData,
		ClientKeyData:         cfg.KeyData,
		ClientCertificate:     cfg.CertFile,
		ClientKey:             cfg.KeyFile,
		Token:                 cfg.BearerToken,
	}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	kc.CurrentContext = name
	raw, err := clientcmd.Write(*kc)
	if err != nil {
		return fmt.Errorf("error encoding kubeconfig: %w", err)
	}
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		return fmt.Errorf("error writing kubeconfig %s: %w", path, err)
	}
	return nil
}
