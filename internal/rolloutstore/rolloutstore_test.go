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

func TestCreateRollback(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	of := fleetrollout.NewForward(fleetrollout.Forward{Namespace: "shop", FleetStage: "prod",
		Freight: fleetv1alpha1.FreightReference{Name: "bad"}, Promotion: "p"})
	of.Name = "fwd"
	c := testClient(t, of)
	req := fleetrollout.Rollback{Of: of, Freight: fleetv1alpha1.FreightReference{Name: "good"}, Actor: "kubernetes:alice", Attempt: 2}

	first, created, err := CreateRollback(ctx, c, c, fleetrollout.NewRollback(req))
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, "fwd-rb2", first.Name, "the attempt the plan names")

	again, created, err := CreateRollback(ctx, c, c, fleetrollout.NewRollback(req))
	require.NoError(t, err)
	require.False(t, created, "a second creator of the same attempt gets the first one's")
	require.Equal(t, first.UID, again.UID)

	other := req
	other.Freight.Name = "older"
	got, created, err := CreateRollback(ctx, c, c, fleetrollout.NewRollback(other))
	var conflict *fleetrollout.ConflictError
	require.ErrorAs(t, err, &conflict, "one rollback at a time")
	require.False(t, created)
	require.Equal(t, "fwd-rb2", got.Name)

	twin := fleetrollout.NewRollback(req)
	twin.Spec.RollbackOf = "elsewhere"
	_, _, err = CreateRollback(ctx, c, c, twin)
	require.ErrorContains(t, err, `is named like a rollback of "elsewhere" but rolls back "fwd"`)
}
