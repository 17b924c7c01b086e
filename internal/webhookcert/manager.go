package webhookcert

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// DefaultCheckInterval is how often a running Manager checks its
// certificate.
const DefaultCheckInterval = time.Hour

// RetryInterval is how soon a failed check is retried.
const RetryInterval = 10 * time.Second

// Manager keeps the webhook's serving certificate.
type Manager struct {
	// Client reads and writes the Secret and the webhook configuration;
	// a direct (uncached) client, because it runs before the manager's
	// cache starts.
	Client client.Client
	// Secret is where the CA and serving certificate are kept.
	Secret types.NamespacedName
	// Service is the webhook Service in Secret's namespace; the serving
	// certificate is valid for its in-cluster DNS names.
	Service string
	// WebhookConfiguration is the ValidatingWebhookConfiguration whose
	// webhooks get the CA bundle; empty leaves it alone.
	WebhookConfiguration string
	// CertDir receives tls.crt and tls.key for the webhook server.
	CertDir string
	// Clock tells the time.
	Clock clock.WithTicker
	// CheckInterval is how often Start checks (default DefaultCheckInterval).
	CheckInterval time.Duration
}

// DNSNames returns the names the serving certificate is valid for.
func (m *Manager) DNSNames() []string {
	base := m.Service + "." + m.Secret.Namespace + ".svc"
	return []string{base, base + ".cluster.local"}
}

// ErrCABundle wraps a failure to write the CA bundle into the webhook
// configuration: the webhook server can serve, but the API server does not
// trust it yet.
var ErrCABundle = errors.New("error writing the webhook CA bundle")

// Ensure makes the Secret hold a valid certificate, writes it to CertDir and
// the CA bundle into the webhook configuration. An error wrapping
// ErrCABundle means only the last part failed.
func (m *Manager) Ensure(ctx context.Context) error {
	b, err := m.ensureSecret(ctx)
	if err != nil {
		return err
	}
	if err := m.writeFiles(b); err != nil {
		return err
	}
	if err := m.injectCABundle(ctx, b[KeyBundle]); err != nil {
		return fmt.Errorf("%w: %w", ErrCABundle, err)
	}
	return nil
}

func (m *Manager) ensureSecret(ctx context.Context) (Bundle, error) {
	for attempt := 0; ; attempt++ {
		s := &corev1.Secret{}
		err := m.Client.Get(ctx, m.Secret, s)
		exists := err == nil
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("error getting Secret %q: %w", m.Secret, err)
		}
		now := m.Clock.Now()
		d := Plan(s.Data, m.DNSNames(), now)
		if d == Keep {
			return s.Data, nil
		}
		b, err := Apply(s.Data, d, m.DNSNames(), now)
		if err != nil {
			return nil, fmt.Errorf("error issuing webhook certificate: %w", err)
		}
		s.Data, s.Type = b, corev1.SecretTypeTLS
		if exists {
			err = m.Client.Update(ctx, s)
		} else {
			s.ObjectMeta = metav1.ObjectMeta{Name: m.Secret.Name, Namespace: m.Secret.Namespace,
				Labels: map[string]string{"app.kubernetes.io/name": "kargo-fleet", "app.kubernetes.io/component": "webhook"}}
			err = m.Client.Create(ctx, s)
		}
		switch {
		case err == nil:
			log.FromContext(ctx).Info("Issued webhook certificate", "Secret", m.Secret, "renewedCA", d == RenewCA)
			return b, nil
		case (apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err)) && attempt < 3:
			// Another replica wrote it first: read what it wrote.
			continue
		default:
			return nil, fmt.Errorf("error writing Secret %q: %w", m.Secret, err)
		}
	}
}

// writeFiles writes the serving certificate where the webhook server reads
// it, only when it changed (the server watches the files).
func (m *Manager) writeFiles(b Bundle) error {
	if err := os.MkdirAll(m.CertDir, 0o700); err != nil {
		return fmt.Errorf("error creating %s: %w", m.CertDir, err)
	}
	for _, k := range []string{KeyKey, KeyCert} {
		path := filepath.Join(m.CertDir, k)
		if cur, err := os.ReadFile(path); err == nil && bytes.Equal(cur, b[k]) {
			continue
		}
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, b[k], 0o600); err != nil {
			return fmt.Errorf("error writing %s: %w", tmp, err)
		}
		if err := os.Rename(tmp, path); err != nil {
			return fmt.Errorf("error writing %s: %w", path, err)
		}
	}
	return nil
}

func (m *Manager) injectCABundle(ctx context.Context, bundle []byte) error {
	if m.WebhookConfiguration == "" {
		return nil
	}
	for attempt := 0; ; attempt++ {
		vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := m.Client.Get(ctx, types.NamespacedName{Name: m.WebhookConfiguration}, vwc); err != nil {
			return fmt.Errorf("error getting ValidatingWebhookConfiguration %q: %w", m.WebhookConfiguration, err)
		}
		changed := false
		for i := range vwc.Webhooks {
			if !bytes.Equal(vwc.Webhooks[i].ClientConfig.CABundle, bundle) {
				vwc.Webhooks[i].ClientConfig.CABundle, changed = bundle, true
			}
		}
		if !changed {
			return nil
		}
		err := m.Client.Update(ctx, vwc)
		if err == nil {
			log.FromContext(ctx).Info("Wrote the webhook CA bundle", "ValidatingWebhookConfiguration", m.WebhookConfiguration)
			return nil
		}
		if !apierrors.IsConflict(err) || attempt >= 3 {
			return fmt.Errorf("error updating ValidatingWebhookConfiguration %q: %w", m.WebhookConfiguration, err)
		}
	}
}

// NeedLeaderElection is false: every replica serves the webhook.
func (m *Manager) NeedLeaderElection() bool { return false }

// Start checks the certificate every CheckInterval until ctx ends. It checks
// at once when started, and a failed check is logged and retried after
// RetryInterval (the current certificate stays valid for months; a webhook
// configuration created after the Pod started gets its CA bundle then).
func (m *Manager) Start(ctx context.Context) error {
	interval := m.CheckInterval
	if interval <= 0 {
		interval = DefaultCheckInterval
	}
	next := time.Duration(0)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-m.Clock.After(next):
			next = interval
			if err := m.Ensure(ctx); err != nil {
				log.FromContext(ctx).Error(err, "Error checking the serving certificate", "service", m.Service)
				next = RetryInterval
			}
		}
	}
}
