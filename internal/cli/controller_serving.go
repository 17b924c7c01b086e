package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"

	"github.com/kargo-fleet/kargo-fleet/internal/manager"
	"github.com/kargo-fleet/kargo-fleet/internal/webhookcert"
	"github.com/kargo-fleet/kargo-fleet/steps"
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
	opts, err := steps.ServerOptionsFromEnv()
	if err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: manager.NewScheme()})
	if err != nil {
		return fmt.Errorf("error creating client: %w", err)
	}
	m := &webhookcert.Manager{
		Client:               c,
		Secret:               types.NamespacedName{Namespace: opts.SigningKeySecret.Namespace, Name: o.secret},
		Service:              o.service,
		WebhookConfiguration: o.configuration,
		CertDir:              certDir,
		Clock:                clock.RealClock{},
	}
	// The webhook server needs the files to start; the CA bundle can follow
	// (the webhook configuration may not exist yet), Start retries it.
	if err := m.Ensure(ctx); err != nil && !errors.Is(err, webhookcert.ErrCABundle) {
		return fmt.Errorf("error generating the webhook certificate: %w", err)
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
	if opts, err := steps.ServerOptionsFromEnv(); err == nil && opts.Enabled() {
		checks["steps"] = listening(opts.Addr)
	}
	for name, check := range checks {
		if err := mgr.AddReadyzCheck(name, check); err != nil {
			return fmt.Errorf("error adding readiness check %s: %w", name, err)
		}
	}
	return nil
}

// listening checks that something accepts TCP connections at addr (a
// listen address such as ":9090": an empty host is this host).
func listening(addr string) healthz.Checker {
	return func(*http.Request) error {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return err
		}
		if host == "" || host == "0.0.0.0" || host == "::" {
			host = "localhost"
		}
		c, err := net.DialTimeout("tcp", net.JoinHostPort(host, port), time.Second)
		if err != nil {
			return fmt.Errorf("step server not listening: %w", err)
		}
		return c.Close()
	}
}
