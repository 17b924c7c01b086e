package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"

	"github.com/kargo-fleet/kargo-fleet/internal/manager"
	"github.com/kargo-fleet/kargo-fleet/internal/stepserver"
	"github.com/kargo-fleet/kargo-fleet/internal/webhookcert"
)

// webhookCertOptions configure certificates the controller generates for
// its webhook server (when neither cert-manager nor the operator provides
// them).
type webhookCertOptions struct {
	secret        string
	service       string
	configuration string
}

func (o *webhookCertOptions) addFlags(f *pflag.FlagSet) {
	f.StringVar(&o.secret, "webhook-cert-secret", "", "Generate and renew the webhook's serving certificate, kept in this Secret "+
		"of the Pod's namespace (default: off, the certificate is mounted into --webhook-cert-dir).")
	f.StringVar(&o.service, "webhook-service", "kargo-fleet-webhook", "Service the generated certificate is valid for.")
	f.StringVar(&o.configuration, "webhook-configuration", "", "ValidatingWebhookConfiguration that gets the generated CA bundle.")
}

func (o *webhookCertOptions) validate(webhooks bool, certDir string) error {
	if o.secret != "" && (!webhooks || certDir == "") {
		return errors.New("--webhook-cert-secret needs --webhooks and a writable --webhook-cert-dir")
	}
	return nil
}

// setup writes a generated certificate (when asked) before the manager
// starts, and registers its renewal.
func (o *webhookCertOptions) setup(ctx context.Context, cfg *rest.Config, mgr ctrl.Manager, certDir string) error {
	if o.secret == "" {
		return nil
	}
	return generateCertificate(ctx, cfg, mgr, &webhookcert.Manager{
		Secret:               types.NamespacedName{Name: o.secret},
		Service:              o.service,
		WebhookConfiguration: o.configuration,
		CertDir:              certDir,
	})
}

// stepCertOptions configure the certificate the controller generates for
// its step server, when TLS is on (KARGO_FLEET_STEP_TLS_CERT_FILE) and the
// operator mounts none.
type stepCertOptions struct {
	secret  string
	service string
}

func (o *stepCertOptions) addFlags(f *pflag.FlagSet) {
	f.StringVar(&o.secret, "step-cert-secret", "", "Generate and renew the step server's serving certificate, kept in this "+
		"Secret of the Pod's namespace, into the folder of "+stepserver.EnvTLSCertFile+" (default: off, the certificate is mounted).")
	f.StringVar(&o.service, "step-service", "kargo-fleet-steps", "Service the generated step server certificate is valid for.")
}

// setup writes a generated step server certificate (when asked) before the
// manager starts, and registers its renewal; the step server reloads it.
func (o *stepCertOptions) setup(ctx context.Context, cfg *rest.Config, mgr ctrl.Manager) error {
	if o.secret == "" {
		return nil
	}
	opts, err := stepserver.OptionsFromEnv()
	if err != nil {
		return err
	}
	dir := filepath.Dir(opts.TLSCertFile)
	if opts.TLSCertFile == "" || filepath.Base(opts.TLSCertFile) != webhookcert.KeyCert ||
		opts.TLSKeyFile != filepath.Join(dir, webhookcert.KeyKey) {
		return fmt.Errorf("--step-cert-secret needs %s and %s set to %s and %s of one writable folder",
			stepserver.EnvTLSCertFile, stepserver.EnvTLSKeyFile, webhookcert.KeyCert, webhookcert.KeyKey)
	}
	return generateCertificate(ctx, cfg, mgr, &webhookcert.Manager{Secret: types.NamespacedName{Name: o.secret},
		Service: o.service, CertDir: dir})
}

// metricsCertOptions configure the secure metrics endpoint's serving
// certificate: mounted into dir, or generated there by the controller and
// kept in a Secret whose CA Prometheus verifies the endpoint with.
type metricsCertOptions struct {
	dir     string
	secret  string
	service string
}

func (o *metricsCertOptions) addFlags(f *pflag.FlagSet) {
	f.StringVar(&o.dir, "metrics-cert-dir", "", "Folder with tls.crt and tls.key of the secure metrics endpoint, "+
		"reloaded when they change (default: none, a self-signed certificate nobody can verify).")
	f.StringVar(&o.secret, "metrics-cert-secret", "", "Generate and renew the metrics endpoint's serving certificate, kept "+
		"in this Secret of the Pod's namespace (its CA in ca.crt and ca-bundle.crt), into --metrics-cert-dir (default: off).")
	f.StringVar(&o.service, "metrics-service", "kargo-fleet-metrics", "Service the generated metrics certificate is valid for.")
}

func (o *metricsCertOptions) validate(secure bool) error {
	if o.secret != "" && (!secure || o.dir == "") {
		return errors.New("--metrics-cert-secret needs --metrics-secure and a writable --metrics-cert-dir")
	}
	return nil
}

// setup writes a generated metrics certificate (when asked) before the
// manager starts: the metrics server reads it when it starts listening,
// and watches it for renewals.
func (o *metricsCertOptions) setup(ctx context.Context, cfg *rest.Config, mgr ctrl.Manager) error {
	if o.secret == "" {
		return nil
	}
	return generateCertificate(ctx, cfg, mgr, &webhookcert.Manager{Secret: types.NamespacedName{Name: o.secret},
		Service: o.service, CertDir: o.dir})
}

// generateCertificate completes m (client, the Pod's namespace, clock),
// writes its certificate before the manager starts and adds m to the
// manager, which renews it.
func generateCertificate(ctx context.Context, cfg *rest.Config, mgr ctrl.Manager, m *webhookcert.Manager) error {
	opts, err := stepserver.OptionsFromEnv()
	if err != nil {
		return err
	}
	if m.Client, err = client.New(cfg, client.Options{Scheme: manager.NewScheme()}); err != nil {
		return fmt.Errorf("error creating client: %w", err)
	}
	m.Secret.Namespace = opts.SigningKeySecret.Namespace
	m.Clock = clock.RealClock{}
	// The servers need the files to start; the CA bundle can follow (the
	// webhook configuration may not exist yet), Start retries it.
	if err := m.Ensure(ctx); err != nil && !errors.Is(err, webhookcert.ErrCABundle) {
		return fmt.Errorf("error generating the serving certificate of Service %q: %w", m.Service, err)
	}
	return mgr.Add(m)
}

// addChecks registers /healthz and /readyz. A replica is ready when its
// webhook server and its step server accept connections: the Service sends
// Kargo's http steps and the apiserver's admission calls to ready replicas
// only.
func (o *controllerOptions) addChecks(mgr ctrl.Manager) error {
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("error adding health check: %w", err)
	}
	checks := map[string]healthz.Checker{"ping": healthz.Ping}
	if o.webhooks {
		checks["webhook"] = mgr.GetWebhookServer().StartedChecker()
	}
	if opts, err := stepserver.OptionsFromEnv(); err == nil && opts.Enabled() {
		checks["steps"] = listening(opts.Addr, opts.TLSCertFile != "")
	}
	for name, check := range checks {
		if err := mgr.AddReadyzCheck(name, check); err != nil {
			return fmt.Errorf("error adding readiness check %s: %w", name, err)
		}
	}
	return nil
}

// listening checks that something accepts TCP connections at addr (a
// listen address such as ":9090": an empty host is this host). With
// serveTLS it completes a TLS handshake: a connection closed before one
// would make the step server log a handshake error on every probe.
func listening(addr string, serveTLS bool) healthz.Checker {
	return func(*http.Request) error {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return err
		}
		if host == "" || host == "0.0.0.0" || host == "::" {
			host = "localhost"
		}
		target := net.JoinHostPort(host, port)
		dialer := &net.Dialer{Timeout: time.Second}
		var c net.Conn
		if serveTLS {
			// The check asks whether the server answers, not who it is.
			c, err = (&tls.Dialer{NetDialer: dialer, Config: &tls.Config{
				InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}}).Dial("tcp", target) //nolint:gosec // see above
		} else {
			c, err = dialer.Dial("tcp", target)
		}
		if err != nil {
			return fmt.Errorf("step server not listening: %w", err)
		}
		return c.Close()
	}
}
