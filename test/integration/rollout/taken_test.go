//go:build integration

package rollout_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/render"
	"github.com/kargo-fleet/kargo-fleet/internal/rollout"
)

// TestTakenStageNameFailsOneTarget: a Stage someone else made holds one
// target's Stage name before the FleetStage exists. The FleetStage says so
// for that one Stage and generates every other; the rollout never promotes
// the taken Stage, fails that one target (StageNameTaken) when its progress
// deadline has passed, and the rest of the fleet goes on: the wave is not
// held for ever.
func TestTakenStageNameFailsOneTarget(t *testing.T) {
	ctx := context.Background()
	const taken = "c-02"
	one := intstr.FromInt32(1)
	f := newFleet(t, "taken-stage-name", fleetSpec{
		targets: inline("c", 4, nil, nil),
		squat:   []string{taken},
		waves: []fleetv1alpha1.Wave{{Name: "all", MaxFailures: &one,
			ProgressDeadline: &metav1.Duration{Duration: 30 * time.Second}}},
	})
	fs := &fleetv1alpha1.FleetStage{}
	require.NoError(t, env.Client.Get(ctx, f.fleetKey, fs))
	synced := meta.FindStatusCondition(fs.Status.Conditions, fleetv1alpha1.StagesSyncedCondition)
	require.NotNil(t, synced)
	require.Equal(t, metav1.ConditionFalse, synced.Status)
	takenName := render.TargetStageName("fleet", taken)
	require.Contains(t, synced.Message, takenName, "the one taken Stage is named")
	for _, id := range []string{"c-00", "c-01", "c-03"} {
		st := &kargo.Stage{}
		require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: render.TargetStageName("fleet", id)}, st),
			"every other target's Stage is generated")
	}

	f.ship(f.good)
	ro := f.rollout(f.good, fleetv1alpha1.RolloutSucceeded, fleetv1alpha1.RolloutFailed, fleetv1alpha1.RolloutHalted)
	require.Equal(t, fleetv1alpha1.RolloutSucceeded, ro.Status.Phase, "one failure is within maxFailures: %s", ro.Status.Message)
	require.Len(t, ro.Status.Failures, 1, "%+v %+v %s", ro.Status.Failures, ro.Status.Waves, ro.Status.Message)
	require.Equal(t, rollout.ReasonStageNameTaken, ro.Status.Failures[0].Reason)
	require.EqualValues(t, 1, ro.Status.Failures[0].Count)
	require.True(t, strings.Contains(ro.Status.Failures[0].Examples[0].Reason, takenName), "%+v", ro.Status.Failures[0])
	all := &kargo.PromotionList{}
	require.NoError(t, env.Client.List(ctx, all, client.InNamespace(f.ns)))
	for _, p := range all.Items {
		require.NotEqual(t, takenName, p.Spec.Stage, "the taken Stage is never promoted")
	}
	squatter := &kargo.Stage{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: takenName}, squatter))
	require.Empty(t, squatter.CurrentFreightNames(), "the Stage that holds the name runs nothing of the fleet's")
}
