package steps

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// TestAPIStore_approvalsFromCache: a gate's approval read goes to the
// approvals reader (the manager's cache) and never to the API server.
func TestAPIStore_approvalsFromCache(t *testing.T) {
	t.Parallel()
	stored := &kargo.Freight{ObjectMeta: metav1.ObjectMeta{Namespace: testProject, Name: "f1"}}
	cached := stored.DeepCopy()
	cached.Status.ApprovedFor = map[string]kargo.ApprovedStage{"prod-canary": {}}
	api, cache := newFakeClient(t, stored), newFakeClient(t, cached)

	f, err := NewAPIStore(api, api).WithApprovalsFrom(cache).GetFreightApprovals(context.Background(), testProject, "f1")
	require.NoError(t, err)
	require.True(t, f.IsApprovedFor("prod-canary"), "read from the approvals reader")
	f, err = NewAPIStore(api, api).GetFreightApprovals(context.Background(), testProject, "f1")
	require.NoError(t, err)
	require.False(t, f.IsApprovedFor("prod-canary"), "without one, from the API reader")
	_, err = NewAPIStore(api, api).WithApprovalsFrom(cache).GetFreightApprovals(context.Background(), testProject, "nope")
	require.True(t, apierrors.IsNotFound(err), "NotFound stays recognisable: %v", err)
}
