//go:build integration

package rollout_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"

	"github.com/kargo-fleet/kargo-fleet/internal/fleetenv"
)

// TestControllerMayNotDeleteConfigMaps asks the API server, with real
// SubjectAccessReviews against the RBAC the chart renders for the
// controller, what it may do with ConfigMaps: read and create them (plan
// snapshots), never delete one, anywhere.
func TestControllerMayNotDeleteConfigMaps(t *testing.T) {
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
	require.False(t, allowed("delete", "kube-system", "coredns"), "the controller may not delete a cluster's ConfigMaps")
	require.False(t, allowed("delete", "shop", "prod-1a2b3c4d5e-plan"), "not even its own plan snapshots: the garbage collector does")
	require.False(t, allowed("deletecollection", "shop", ""))
	require.False(t, allowed("update", "shop", "prod-1a2b3c4d5e-plan"), "plan snapshots are immutable")
	require.True(t, allowed("create", "shop", ""), "it writes plan snapshots")
	require.True(t, allowed("get", "shop", "prod-1a2b3c4d5e-plan"), "and reads them back")
}
