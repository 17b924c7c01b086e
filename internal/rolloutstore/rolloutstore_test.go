package rolloutstore

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetrollout"
)

func testClient(t *testing.T, objs ...client.Object) client.Client {
	t.Helper()
	s := apiruntime.NewScheme()
	require.NoError(t, fleetv1alpha1.AddToScheme(s))
	return fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).WithStatusSubresource(&fleetv1alpha1.FleetRollout{}).Build()
}

func TestRetryRollback(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	of := fleetrollout.NewForward(fleetrollout.Forward{Namespace: "shop", FleetStage: "prod",
		Freight: fleetv1alpha1.FreightReference{Name: "bad"}, Promotion: "p"})
	of.Name = "fwd"
	of.Status.Phase, of.Spec.Intent = fleetv1alpha1.RolloutAborted, fleetv1alpha1.IntentAbort
	c := testClient(t, of)
	req := fleetrollout.Rollback{Of: of, Freight: fleetv1alpha1.FreightReference{Name: "good"}, Actor: "kubernetes:alice"}

	first, created, err := RetryRollback(ctx, c, c, req)
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, "fwd-rb", first.Name)

	again, created, err := RetryRollback(ctx, c, c, req)
	require.NoError(t, err)
	require.False(t, created, "a rollback that runs is the rollback")
	require.Equal(t, "fwd-rb", again.Name)

	other := req
	other.Freight.Name = "older"
	_, _, err = RetryRollback(ctx, c, c, other)
	var conflict *fleetrollout.ConflictError
	require.ErrorAs(t, err, &conflict, "one rollback at a time")

	first.Status.Phase = fleetv1alpha1.RolloutAborted
	require.NoError(t, c.Status().Update(ctx, first))
	ensured, created, err := EnsureRollback(ctx, c, c, fleetrollout.NewRollback(req))
	require.NoError(t, err)
	require.False(t, created, "the automatic policy and the step never retry an aborted rollback")
	require.Equal(t, "fwd-rb", ensured.Name)

	second, created, err := RetryRollback(ctx, c, c, req)
	require.NoError(t, err)
	require.True(t, created, "an aborted rollback is retried")
	require.Equal(t, "fwd-rb2", second.Name)
	require.Equal(t, "fwd", second.Spec.RollbackOf)
	found, err := FindRollbackOf(ctx, c, "shop", "fwd")
	require.NoError(t, err)
	require.Equal(t, "fwd-rb2", found.Name, "the newest attempt is the rollout's rollback")

	for n := 3; n <= fleetrollout.MaxRollbackAttempts+1; n++ {
		found.Status.Phase = fleetv1alpha1.RolloutFailed
		require.NoError(t, c.Status().Update(ctx, found))
		found, created, err = RetryRollback(ctx, c, c, req)
		if n > fleetrollout.MaxRollbackAttempts {
			require.ErrorContains(t, err, "rolled back 5 times already")
			require.False(t, created)
			break
		}
		require.NoError(t, err)
		require.Equal(t, fleetrollout.RollbackAttemptName("fwd", n), found.Name)
	}
}
