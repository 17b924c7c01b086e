//go:build integration

// Package docs_test runs the shell commands of docs/install.md as a reader
// types them, through bash, with the kargo-fleet binary, kubectl and a Helm
// built from source on PATH, against two real kube-apiservers: a local
// fleet environment (Kargo's CRDs, the Kargo simulator and the kargo-fleet
// controller) for the commands that use a fleet, and a bare one with only
// Kargo's CRDs for installing, upgrading and uninstalling the chart. Which
// commands run and which are only documented is decided by the rule table
// in install_test.go, never silently.
package docs_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/kargo-fleet/kargo-fleet/internal/envtest"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetenv"
)

var (
	// fleet is the local fleet environment; fleetKubeconfig reaches it as a
	// cluster administrator.
	fleet           *fleetenv.Env
	fleetKubeconfig string
	// bareKubeconfig reaches a kube-apiserver with Kargo's CRDs only, where
	// the chart is installed.
	bareKubeconfig string
	// bareAPIServerLog is the bare kube-apiserver's own log, read when an
	// uninstall command waits on it.
	bareAPIServerLog string
	// binDir holds kargo-fleet and helm, put first on PATH.
	binDir string
	// workDir is where commands run: it holds the repository's charts and
	// examples, as a reader's clone does, and takes what they write.
	workDir string
)

func TestMain(m *testing.M) {
	code, err := run(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(code)
}

func run(m *testing.M) (int, error) {
	level := zapcore.Level(1)
	if os.Getenv("TEST_VERBOSE") != "" {
		level = -2
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(level), zap.StacktraceLevel(zapcore.PanicLevel)))
	tmp, err := os.MkdirTemp("", "kargo-fleet-docs-")
	if err != nil {
		return 0, err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	root := envtest.RepoRoot()
	binDir, workDir = filepath.Join(tmp, "bin"), filepath.Join(tmp, "work")
	for _, d := range []string{binDir, workDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return 0, err
		}
	}
	for _, name := range []string{"charts", "examples"} {
		if err := os.Symlink(filepath.Join(root, name), filepath.Join(workDir, name)); err != nil {
			return 0, err
		}
	}
	if err := buildTools(root); err != nil {
		return 0, err
	}

	fleet, err = fleetenv.Start(context.Background(), fleetenv.Options{})
	if err != nil {
		return 0, err
	}
	defer func() {
		if err := fleet.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}()
	admin, err := fleet.AddUser("docs-admin", "system:masters")
	if err != nil {
		return 0, err
	}
	fleetKubeconfig = filepath.Join(tmp, "fleet.kubeconfig")
	if err := fleetenv.WriteKubeconfig(admin, fleetKubeconfig); err != nil {
		return 0, err
	}

	kargoPaths, _ := envtest.KargoCRDPaths()
	bareAPIServerLog = filepath.Join(tmp, "bare-kube-apiserver.log")
	apiLog, err := os.Create(bareAPIServerLog)
	if err != nil {
		return 0, err
	}
	defer func() { _ = apiLog.Close() }()
	bare := &crenvtest.Environment{CRDDirectoryPaths: kargoPaths, ErrorIfCRDPathMissing: true,
		ControlPlane: crenvtest.ControlPlane{APIServer: &crenvtest.APIServer{Out: apiLog, Err: apiLog}}}
	bareCfg, err := bare.Start()
	if err != nil {
		return 0, fmt.Errorf("error starting the bare control plane: %w", err)
	}
	defer func() { _ = bare.Stop() }()
	bareAdmin, err := bare.ControlPlane.AddUser(crenvtest.User{Name: "docs-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return 0, err
	}
	bareKubeconfig = filepath.Join(tmp, "bare.kubeconfig")
	if err := fleetenv.WriteKubeconfig(bareAdmin.Config(), bareKubeconfig); err != nil {
		return 0, err
	}
	fmt.Printf("envtest: kube-apiserver %s: a fleet environment at %s (%s Kargo CRDs, the Kargo simulator, the controller) "+
		"and a bare one at %s (Kargo CRDs only)\n", envtest.K8sVersion, fleet.Config.Host, fleet.KargoCRDs, bareCfg.Host)
	return m.Run(), nil
}

// buildTools builds the kargo-fleet command into binDir, and Helm from
// source (the version go.mod requires; such a Helm assumes Kubernetes v1.20
// without a cluster) into bin/tools, once.
func buildTools(root string) error {
	build := exec.Command("go", "build", "-o", filepath.Join(binDir, "kargo-fleet"), "./cmd/kargo-fleet")
	build.Dir, build.Stdout, build.Stderr = root, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("error building kargo-fleet: %w", err)
	}
	list := exec.Command("go", "list", "-m", "-f", "{{.Version}}", "helm.sh/helm/v3")
	list.Dir = root
	v, err := list.Output()
	if err != nil {
		return fmt.Errorf("error reading Helm's version from go.mod: %w", err)
	}
	version := strings.TrimSpace(string(v))
	helm := filepath.Join(root, "bin", "tools", "helm-"+version)
	if _, err := os.Stat(helm); err != nil {
		// Built with this module's dependencies (a copy of go.mod and
		// go.sum, so the repository's stay untouched), whose packages the
		// build cache already holds: `go install helm@version` would
		// compile Helm's own, older dependency versions from scratch.
		mod, err := os.MkdirTemp("", "helm-mod-")
		if err != nil {
			return err
		}
		defer func() { _ = os.RemoveAll(mod) }()
		for _, f := range []string{"go.mod", "go.sum"} {
			raw, err := os.ReadFile(filepath.Join(root, f))
			if err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(mod, f), raw, 0o644); err != nil {
				return err
			}
		}
		install := exec.Command("go", "build", "-modfile", filepath.Join(mod, "go.mod"), "-mod=mod", "-o", helm,
			"helm.sh/helm/v3/cmd/helm")
		install.Dir, install.Stdout, install.Stderr = root, os.Stderr, os.Stderr
		if err := install.Run(); err != nil {
			return fmt.Errorf("error building Helm %s: %w", version, err)
		}
	}
	return os.Symlink(helm, filepath.Join(binDir, "helm"))
}
