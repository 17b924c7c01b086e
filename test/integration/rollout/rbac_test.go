//go:build integration

package rollout_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"

	"github.com/kargo-fleet/kargo-fleet/internal/fleetenv"
)

// TestControllerConfigMapRights asks the API server, with real
// SubjectAccessReviews against the RBAC the chart renders for the
// controller, what it may do with ConfigMaps: read and create them (plan
// snapshots, Stage records), delete one at a time (replaced Stage
// records), never update or delete many.
func TestControllerConfigMapRights(t *testing.T) {
	allowed := func(verb, ns, name string) bool {
		t.Helper()
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: fleetenv.ControllerUser,
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: verb, Resource: "configmaps", Namespace: ns, Name: name,
			},
		}}
		require.NoError(t, env.Client.Create(context.Background(), sar))
		return sar.Status.Allowed
	}
	// RBAC cannot narrow a delete by name or shape: the controller's
	// admission policy holds its deletes to replaced Stage records in fleet
	// Projects (test/integration/privilege,
	// TestConfigMapDeletesAreStageRecordsOnly).
	require.True(t, allowed("delete", "shop", "prod-stages-0123456789abcdef"), "it deletes the Stage records newer ones replaced")
	require.False(t, allowed("deletecollection", "shop", ""), "never many at once")
	require.False(t, allowed("update", "shop", "prod-1a2b3c4d5e-plan"), "plan snapshots are immutable")
	require.True(t, allowed("create", "shop", ""), "it writes plan snapshots")
	require.True(t, allowed("get", "shop", "prod-1a2b3c4d5e-plan"), "and reads them back")
}
