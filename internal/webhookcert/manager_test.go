package webhookcert

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func TestManagerEnsure(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "kargo-fleet"},
		Webhooks:   []admissionregistrationv1.ValidatingWebhook{{Name: "a.example.com"}, {Name: "b.example.com"}},
	}
	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(vwc).Build()
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC))
	dir := t.TempDir()
	newManager := func() *Manager {
		return &Manager{Client: c, Secret: types.NamespacedName{Namespace: "kargo-fleet", Name: "kargo-fleet-webhook-tls"},
			Service: "kargo-fleet-webhook", WebhookConfiguration: "kargo-fleet", CertDir: dir, Clock: clk}
	}
	read := func() (Bundle, []byte, [][]byte) {
		s := &corev1.Secret{}
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "kargo-fleet", Name: "kargo-fleet-webhook-tls"}, s))
		crt, err := os.ReadFile(filepath.Join(dir, KeyCert))
		require.NoError(t, err)
		got := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		require.NoError(t, c.Get(ctx, client.ObjectKey{Name: "kargo-fleet"}, got))
		var bundles [][]byte
		for _, w := range got.Webhooks {
			bundles = append(bundles, w.ClientConfig.CABundle)
		}
		return s.Data, crt, bundles
	}

	// First start: the Secret is created, the files written, every webhook
	// gets the CA.
	require.NoError(t, newManager().Ensure(ctx))
	first, crt, bundles := read()
	require.Equal(t, first[KeyCert], crt)
	for _, b := range bundles {
		require.Equal(t, first[KeyBundle], b)
	}
	require.Equal(t, Keep, Plan(first, newManager().DNSNames(), clk.Now()))

	// A second replica reads the same certificate.
	require.NoError(t, newManager().Ensure(ctx))
	second, _, _ := read()
	require.Equal(t, first, second)

	// Two thirds into the serving certificate's life it is renewed; the CA
	// and so the bundle stay.
	clk.Step(ServingValidity * 3 / 4)
	require.NoError(t, newManager().Ensure(ctx))
	renewed, crt, bundles := read()
	require.NotEqual(t, first[KeyCert], renewed[KeyCert])
	require.Equal(t, renewed[KeyCert], crt)
	require.Equal(t, first[KeyCA], renewed[KeyCA])
	for _, b := range bundles {
		require.Equal(t, first[KeyBundle], b)
	}
}

func TestManagerEnsureWithoutWebhookConfiguration(t *testing.T) {
	t.Parallel()
	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).Build()
	dir := t.TempDir()
	m := &Manager{Client: c, Secret: types.NamespacedName{Namespace: "ns", Name: "tls"}, Service: "svc",
		WebhookConfiguration: "missing", CertDir: dir, Clock: clocktesting.NewFakeClock(time.Now())}
	err := m.Ensure(context.Background())
	require.ErrorIs(t, err, ErrCABundle, "the files are written; only the CA bundle is missing")
	_, err = os.Stat(filepath.Join(dir, KeyKey))
	require.NoError(t, err)
}
