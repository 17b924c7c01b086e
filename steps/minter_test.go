package steps

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/fleetstage/api/v1alpha1"
)

func TestTokenMinter_Reconcile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	key := types.NamespacedName{Namespace: testProject, Name: fleetv1alpha1.StepTokenSecretName}
	req := reconcile.Request{NamespacedName: key}
	want := []byte(DeriveToken(testKey, testProject))

	t.Run("mints, repairs and deletes", func(t *testing.T) {
		t.Parallel()
		fs := testFleetStage()
		c := newFakeClient(t, fs)
		m := NewTokenMinter(c, c, testKey)

		res, err := m.Reconcile(ctx, req)
		require.NoError(t, err)
		require.Equal(t, tokenResync, res.RequeueAfter)
		var s corev1.Secret
		require.NoError(t, c.Get(ctx, key, &s))
		require.Equal(t, want, s.Data[fleetv1alpha1.StepTokenSecretKey])
		require.Equal(t, ManagedByValue, s.Labels[ManagedByLabel])
		rv := s.ResourceVersion

		_, err = m.Reconcile(ctx, req)
		require.NoError(t, err)
		require.NoError(t, c.Get(ctx, key, &s))
		require.Equal(t, rv, s.ResourceVersion, "an up-to-date Secret is not written")

		s.Data[fleetv1alpha1.StepTokenSecretKey] = []byte("tampered")
		require.NoError(t, c.Update(ctx, &s))
		_, err = m.Reconcile(ctx, req)
		require.NoError(t, err)
		require.NoError(t, c.Get(ctx, key, &s))
		require.Equal(t, want, s.Data[fleetv1alpha1.StepTokenSecretKey])

		require.NoError(t, c.Delete(ctx, fs))
		_, err = m.Reconcile(ctx, req)
		require.NoError(t, err)
		require.True(t, apierrors.IsNotFound(c.Get(ctx, key, &s)), "no FleetStage left: no token")
	})

	t.Run("adopts a Secret of the reserved name", func(t *testing.T) {
		t.Parallel()
		c := newFakeClient(t, testFleetStage(), &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: testProject, Name: key.Name},
			Data:       map[string][]byte{"other": []byte("x")},
		})
		_, err := NewTokenMinter(c, c, testKey).Reconcile(ctx, req)
		require.NoError(t, err)
		var s corev1.Secret
		require.NoError(t, c.Get(ctx, key, &s))
		require.Equal(t, want, s.Data[fleetv1alpha1.StepTokenSecretKey])
		require.Equal(t, []byte("x"), s.Data["other"])
	})

	t.Run("leaves a foreign Secret alone when there is no FleetStage", func(t *testing.T) {
		t.Parallel()
		c := newFakeClient(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: testProject, Name: key.Name}})
		_, err := NewTokenMinter(c, c, testKey).Reconcile(ctx, req)
		require.NoError(t, err)
		var s corev1.Secret
		require.NoError(t, c.Get(ctx, key, &s))
	})

	t.Run("no signing key", func(t *testing.T) {
		t.Parallel()
		c := newFakeClient(t, testFleetStage())
		_, err := NewTokenMinter(c, c, StaticKey("short")).Reconcile(ctx, req)
		require.Error(t, err)
	})
}
