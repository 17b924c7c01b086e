package steptoken

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

// rotatingKey is a KeySource whose keys a test changes.
type rotatingKey struct{ keys KeySet }

func (k *rotatingKey) SigningKeys(context.Context) (KeySet, error) { return k.keys, k.keys.validate() }

func TestMinter_Reconcile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	key := types.NamespacedName{Namespace: testProject, Name: fleetv1alpha1.StepTokenSecretName}
	req := reconcile.Request{NamespacedName: key}
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	other := []byte("fedcba9876543210fedcba9876543210")
	token := func(t *testing.T, c client.Client) string {
		t.Helper()
		var s corev1.Secret
		require.NoError(t, c.Get(ctx, key, &s))
		require.Equal(t, ManagedByValue, s.Labels[ManagedByLabel])
		return string(s.Data[fleetv1alpha1.StepTokenSecretKey])
	}
	revoke := func(t *testing.T, c client.Client, value string) {
		t.Helper()
		var ns corev1.Namespace
		require.NoError(t, c.Get(ctx, client.ObjectKey{Name: testProject}, &ns))
		ns.Annotations = map[string]string{fleetv1alpha1.StepTokenRevokedAnnotation: value}
		if value == "" {
			ns.Annotations = nil
		}
		require.NoError(t, c.Update(ctx, &ns))
	}

	t.Run("mints, repairs and deletes", func(t *testing.T) {
		t.Parallel()
		fs := testFleetStage()
		c := newFakeClient(t, fs, testNamespace(testProject, nil))
		m := NewMinter(c, c, testKey, clocktesting.NewFakePassiveClock(now))

		res, err := m.Reconcile(ctx, req)
		require.NoError(t, err)
		require.Equal(t, RenewAfter, res.RequeueAfter)
		require.Equal(t, Issue(testKey, testProject, now), token(t, c))
		var s corev1.Secret
		require.NoError(t, c.Get(ctx, key, &s))
		rv := s.ResourceVersion

		_, err = m.Reconcile(ctx, req)
		require.NoError(t, err)
		require.NoError(t, c.Get(ctx, key, &s))
		require.Equal(t, rv, s.ResourceVersion, "an up-to-date Secret is not written")

		s.Data[fleetv1alpha1.StepTokenSecretKey] = []byte("tampered")
		require.NoError(t, c.Update(ctx, &s))
		_, err = m.Reconcile(ctx, req)
		require.NoError(t, err)
		require.Equal(t, Issue(testKey, testProject, now), token(t, c))

		require.NoError(t, c.Delete(ctx, &s))
		_, err = m.Reconcile(ctx, req)
		require.NoError(t, err)
		require.Equal(t, Issue(testKey, testProject, now), token(t, c), "a deleted Secret is minted again")

		require.NoError(t, c.Delete(ctx, fs))
		_, err = m.Reconcile(ctx, req)
		require.NoError(t, err)
		require.True(t, apierrors.IsNotFound(c.Get(ctx, key, &s)), "no FleetStage left: no token")
	})

	t.Run("a token its cache has not seen yet is no error", func(t *testing.T) {
		t.Parallel()
		c := newFakeClient(t, testFleetStage(), testNamespace(testProject, nil))
		lagging := newFakeClient(t) // the token cache, before it sees the Secret
		_, err := NewMinter(c, c, testKey, clocktesting.NewFakePassiveClock(now)).Reconcile(ctx, req)
		require.NoError(t, err)
		res, err := NewMinter(c, lagging, testKey, clocktesting.NewFakePassiveClock(now)).Reconcile(ctx, req)
		require.NoError(t, err, "AlreadyExists: the cache lags, nothing is wrong")
		require.Equal(t, time.Second, res.RequeueAfter, "looked at again once the cache has it")
	})

	t.Run("renews an ageing token before it expires", func(t *testing.T) {
		t.Parallel()
		c := newFakeClient(t, testFleetStage(), testNamespace(testProject, nil))
		clk := clocktesting.NewFakePassiveClock(now)
		m := NewMinter(c, c, testKey, clk)
		_, err := m.Reconcile(ctx, req)
		require.NoError(t, err)

		clk.SetTime(now.Add(RenewAfter - time.Hour))
		res, err := m.Reconcile(ctx, req)
		require.NoError(t, err)
		require.Equal(t, time.Hour, res.RequeueAfter, "checked again when it is due")
		require.Equal(t, Issue(testKey, testProject, now), token(t, c))

		clk.SetTime(now.Add(RenewAfter))
		_, err = m.Reconcile(ctx, req)
		require.NoError(t, err)
		require.Equal(t, Issue(testKey, testProject, now.Add(RenewAfter)), token(t, c))
		require.Less(t, RenewAfter, TTL/2, "renewed long before it expires")
	})

	t.Run("re-mints with a rotated key", func(t *testing.T) {
		t.Parallel()
		c := newFakeClient(t, testFleetStage(), testNamespace(testProject, nil))
		keys := &rotatingKey{keys: KeySet{Current: testKey}}
		m := NewMinter(c, c, keys, clocktesting.NewFakePassiveClock(now))
		_, err := m.Reconcile(ctx, req)
		require.NoError(t, err)

		keys.keys = KeySet{Current: other, Previous: testKey}
		_, err = m.Reconcile(ctx, req)
		require.NoError(t, err)
		require.Equal(t, Issue(other, testProject, now), token(t, c))
	})

	t.Run("revocation deletes the token until it is lifted", func(t *testing.T) {
		t.Parallel()
		c := newFakeClient(t, testFleetStage(), testNamespace(testProject, nil))
		clk := clocktesting.NewFakePassiveClock(now)
		m := NewMinter(c, c, testKey, clk)
		_, err := m.Reconcile(ctx, req)
		require.NoError(t, err)

		revoke(t, c, "true")
		res, err := m.Reconcile(ctx, req)
		require.NoError(t, err)
		require.Zero(t, res.RequeueAfter, "lifting the annotation is watched")
		var s corev1.Secret
		require.True(t, apierrors.IsNotFound(c.Get(ctx, key, &s)), "a revoked Project has no token")

		revoke(t, c, "")
		clk.SetTime(now.Add(time.Minute))
		_, err = m.Reconcile(ctx, req)
		require.NoError(t, err)
		require.Equal(t, Issue(testKey, testProject, now.Add(time.Minute)), token(t, c))
	})

	t.Run("a revocation time replaces older tokens", func(t *testing.T) {
		t.Parallel()
		c := newFakeClient(t, testFleetStage(), testNamespace(testProject, nil))
		clk := clocktesting.NewFakePassiveClock(now)
		m := NewMinter(c, c, testKey, clk)
		_, err := m.Reconcile(ctx, req)
		require.NoError(t, err)

		clk.SetTime(now.Add(time.Hour))
		revoke(t, c, now.Add(time.Minute).Format(time.RFC3339))
		_, err = m.Reconcile(ctx, req)
		require.NoError(t, err)
		require.Equal(t, Issue(testKey, testProject, now.Add(time.Hour)), token(t, c))

		revoke(t, c, now.Add(2*time.Hour).Format(time.RFC3339))
		res, err := m.Reconcile(ctx, req)
		require.NoError(t, err)
		require.Equal(t, time.Hour, res.RequeueAfter, "minted again when the revocation time has passed")
		var s corev1.Secret
		require.True(t, apierrors.IsNotFound(c.Get(ctx, key, &s)))
	})

	t.Run("adopts a Secret of the reserved name", func(t *testing.T) {
		t.Parallel()
		c := newFakeClient(t, testFleetStage(), testNamespace(testProject, nil), &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: testProject, Name: key.Name},
			Data:       map[string][]byte{"other": []byte("x")},
		})
		_, err := NewMinter(c, c, testKey, clocktesting.NewFakePassiveClock(now)).Reconcile(ctx, req)
		require.NoError(t, err)
		require.Equal(t, Issue(testKey, testProject, now), token(t, c))
		var s corev1.Secret
		require.NoError(t, c.Get(ctx, key, &s))
		require.Equal(t, []byte("x"), s.Data["other"])
	})

	t.Run("leaves a foreign Secret alone when there is no FleetStage", func(t *testing.T) {
		t.Parallel()
		c := newFakeClient(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: testProject, Name: key.Name}})
		_, err := NewMinter(c, c, testKey, clocktesting.NewFakePassiveClock(now)).Reconcile(ctx, req)
		require.NoError(t, err)
		var s corev1.Secret
		require.NoError(t, c.Get(ctx, key, &s))
	})

	t.Run("no signing key", func(t *testing.T) {
		t.Parallel()
		c := newFakeClient(t, testFleetStage(), testNamespace(testProject, nil))
		_, err := NewMinter(c, c, StaticKey("short"), clocktesting.NewFakePassiveClock(now)).Reconcile(ctx, req)
		require.Error(t, err)
	})

	t.Run("a namespace not yet labelled as a fleet Project waits for its label", func(t *testing.T) {
		t.Parallel()
		ns := testNamespace(testProject, nil)
		ns.Labels = nil
		c := newFakeClient(t, testFleetStage(), ns)
		res, err := NewMinter(c, c, testKey, clocktesting.NewFakePassiveClock(now)).Reconcile(ctx, req)
		require.NoError(t, err, "the admission policy would refuse the Secret: nothing is tried")
		require.Zero(t, res.RequeueAfter, "the label's arrival brings the next look")
		require.True(t, apierrors.IsNotFound(c.Get(ctx, key, &corev1.Secret{})))
	})
}
