//go:build integration

package rollout_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/render"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

// TestRecreatedTargetStageIsPromotedAgain deletes a target Stage after its
// Promotion succeeded. The Promotion stays behind, as it does until
// Kubernetes' garbage collector removes it (envtest runs none), or for good
// after an orphaning delete. The
// FleetStage controller re-creates the Stage; the rollout promotes the new
// Stage once, for its UID, and goes on without a failure.
func TestRecreatedTargetStageIsPromotedAgain(t *testing.T) {
	ctx := context.Background()
	f := newFleet(t, "recreated-stage", fleetSpec{targets: inline("c", 3, nil, nil), waves: []fleetv1alpha1.Wave{
		{Name: "pilot", Count: testutil.Int(1)},
		{Name: "rest", Approval: fleetv1alpha1.ApprovalRequired},
	}})
	f.ship(f.good)
	ro := f.rollout(f.good, fleetv1alpha1.RolloutWaitingForApproval, fleetv1alpha1.RolloutFailed)
	require.Equal(t, fleetv1alpha1.RolloutWaitingForApproval, ro.Status.Phase, ro.Status.Message)
	first := f.promotionsOf(f.good, "pilot")
	require.Len(t, first, 1)
	require.Equal(t, kargo.PromotionSucceeded, first[0].Status.Phase)
	target := first[0].Labels[fleetv1alpha1.TargetLabel]

	key := client.ObjectKey{Namespace: f.ns, Name: render.TargetStageName("fleet", target)}
	old := &kargo.Stage{}
	require.NoError(t, env.Client.Get(ctx, key, old))
	require.Equal(t, []string{f.good}, old.CurrentFreightNames())
	require.NoError(t, env.Client.Delete(ctx, old, client.Preconditions{UID: &old.UID}))

	// The controller re-creates the Stage under a new UID.
	recreated := &kargo.Stage{}
	require.Eventually(t, func() bool {
		return env.Client.Get(ctx, key, recreated) == nil && recreated.UID != old.UID
	}, wait, tick, "the FleetStage controller did not re-create the target Stage")

	// The rollout promotes the new Stage, once, and the Stage runs the Freight.
	require.Eventually(t, func() bool {
		st := &kargo.Stage{}
		return env.Client.Get(ctx, key, st) == nil && st.UID == recreated.UID &&
			len(st.CurrentFreightNames()) == 1 && st.CurrentFreightNames()[0] == f.good
	}, wait, tick, "the re-created target Stage was never promoted")
	promotions := f.promotionsOf(f.good, "pilot")
	require.Len(t, promotions, 2, "one Promotion per Stage UID")
	byStage := map[types.UID]int{}
	for _, p := range promotions {
		require.Equal(t, target, p.Labels[fleetv1alpha1.TargetLabel])
		byStage[stageUIDOf(&p)]++
	}
	require.Equal(t, map[types.UID]int{old.UID: 1, recreated.UID: 1}, byStage)

	// The rollout's status follows the re-created Stage's Promotion with its
	// own write: wait for it, then it must be where it was, with no failure.
	require.Eventually(t, func() bool {
		ro = f.findRollout(f.good, fleetv1alpha1.DirectionForward)
		return ro != nil && ro.Status.Phase == fleetv1alpha1.RolloutWaitingForApproval &&
			len(ro.Status.Waves) > 0 && ro.Status.Waves[0].InFlight == 0
	}, wait, tick, "the rollout never settled back to waiting for approval (last: %s)", describe(&ro))
	require.Empty(t, ro.Status.Failures, "a re-created Stage is no failure")
}

// stageUIDOf returns the UID of the Stage a Promotion was made for: the one
// kargo-fleet recorded, else the Stage Kargo made its owner.
func stageUIDOf(p *kargo.Promotion) types.UID {
	if uid := p.Annotations[fleetv1alpha1.StageUIDAnnotation]; uid != "" {
		return types.UID(uid)
	}
	if ref := metav1.GetControllerOf(p); ref != nil && ref.Kind == "Stage" {
		return ref.UID
	}
	return ""
}
