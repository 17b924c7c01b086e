package dashboard

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/dashboard/dashtest"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
	"github.com/kargo-fleet/kargo-fleet/internal/rollout"
)

// controllerReading is how the rollout controller reads a target: Observe
// over the same objects, then Judge with its wave's limits, as Decide does.
func controllerReading(t *testing.T, in FleetInput, id string) rollout.TargetState {
	t.Helper()
	shown := ShownRollout(in.FleetStage, in.Rollouts)
	require.NotNil(t, shown)
	s := rollout.Snapshot{Rollout: shown, FleetStage: in.FleetStage, Plan: in.Plan, Recorded: map[string]types.UID{}}
	for i := range in.Stages {
		st := &in.Stages[i]
		s.Stages = append(s.Stages, st)
		s.Recorded[st.Name] = st.UID
	}
	for i := range in.Promotions {
		s.Promotions = append(s.Promotions, &in.Promotions[i])
	}
	o, err := rollout.Observe(s, in.Now)
	require.NoError(t, err)
	for _, w := range in.Plan.Waves {
		if slices.ContainsFunc(w.Members, func(m plan.Target) bool { return m.ID == id }) {
			return rollout.Judge(o.Targets[id], rollout.Limits{ProgressDeadline: w.ProgressDeadline,
				UnhealthyGrace: w.UnhealthyGrace}, in.Now).State
		}
	}
	t.Fatalf("target %s is in no wave", id)
	return ""
}

// unhealthySince makes the target's Stage unhealthy, its Promotion
// finished ago, under an unhealthy grace of a minute.
func unhealthySince(ago time.Duration) func(*kargo.Stage, *kargo.Promotion, *FleetInput) {
	return func(st *kargo.Stage, p *kargo.Promotion, in *FleetInput) {
		st.Status.Health.Status = kargo.HealthUnhealthy
		p.Status.FinishedAt = &metav1.Time{Time: in.Now.Add(-ago)}
		in.Plan.Waves[0].UnhealthyGrace = time.Minute
	}
}

// The dashboard's target page and grid read Kargo's objects as the
// controller does, so a target shows the state the rollout acts on
// (and `kargo-fleet status` counts, from the rollout's status).
func TestDashboardReadsTargetsAsTheController(t *testing.T) {
	t.Parallel()
	onGood := func(st *kargo.Stage) {
		st.Status.FreightHistory = st.Status.FreightHistory[len(st.Status.FreightHistory)-1:]
	}
	tests := []struct {
		name string
		edit func(st *kargo.Stage, p *kargo.Promotion, in *FleetInput)
		want rollout.TargetState
	}{
		{name: "succeeded, and the Stage shows the Freight", want: rollout.TargetSucceeded},
		{name: "succeeded before the Stage shows the Freight",
			edit: func(st *kargo.Stage, _ *kargo.Promotion, _ *FleetInput) { onGood(st) }, want: rollout.TargetInFlight},
		{name: "a failed verification of other Freight says nothing of the rollout's",
			edit: func(st *kargo.Stage, _ *kargo.Promotion, _ *FleetInput) {
				onGood(st)
				st.Status.FreightHistory[0].VerificationHistory = []kargo.VerificationInfo{{ID: "v1", Phase: kargo.VerificationFailed}}
			}, want: rollout.TargetInFlight},
		{name: "a failed verification of the rollout's Freight fails the target",
			edit: func(st *kargo.Stage, _ *kargo.Promotion, _ *FleetInput) {
				st.Status.FreightHistory[0].VerificationHistory = []kargo.VerificationInfo{{ID: "v1", Phase: kargo.VerificationFailed}}
			}, want: rollout.TargetFailed},
		{name: "an errored Promotion",
			edit: func(_ *kargo.Stage, p *kargo.Promotion, _ *FleetInput) {
				p.Status.Phase, p.Status.Message = kargo.PromotionErrored, "step sync errored"
			}, want: rollout.TargetFailed},
		{name: "an Errored retry created within the same second: the newer by name counts",
			edit: func(_ *kargo.Stage, p *kargo.Promotion, in *FleetInput) {
				retry := p.DeepCopy()
				retry.Name = p.Name + "z"
				retry.Status.Phase = kargo.PromotionErrored
				in.Promotions = append(in.Promotions, *retry)
			}, want: rollout.TargetFailed},
		{name: "unhealthy within the grace after the Promotion finished", edit: unhealthySince(30 * time.Second),
			want: rollout.TargetInFlight},
		{name: "unhealthy past the grace", edit: unhealthySince(2 * time.Minute), want: rollout.TargetFailed},
		{name: "a Stage being pruned before it was started left the fleet",
			edit: func(st *kargo.Stage, p *kargo.Promotion, in *FleetInput) {
				st.Annotations[fleetv1alpha1.PruneAnnotation] = "true"
				in.Promotions = slices.DeleteFunc(in.Promotions, func(q kargo.Promotion) bool { return q.Name == p.Name })
			}, want: rollout.TargetSkipped},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := fleetInput(dashtest.NewFleet(20, now), "")
			id := in.Plan.Waves[0].Members[0].ID
			stage := targetStage(in.Stages, id)
			for i := range in.Stages {
				in.Stages[i].UID = types.UID(fmt.Sprintf("uid-%d", i))
			}
			i := slices.IndexFunc(in.Promotions, func(p kargo.Promotion) bool { return p.Labels[fleetv1alpha1.TargetLabel] == id })
			require.GreaterOrEqual(t, i, 0)
			if tt.edit != nil {
				tt.edit(stage, &in.Promotions[i], &in)
			}

			require.Equal(t, tt.want, controllerReading(t, in, id), "the controller's reading")
			d, ok := BuildTarget(in, id)
			require.True(t, ok)
			require.Equal(t, string(tt.want), d.State, "the target page: %s", d.Message)
			g := BuildFleet(in).Grid
			at := slices.Index(g.IDs, id)
			require.GreaterOrEqual(t, at, 0)
			require.Equal(t, string(stateChar(tt.want)), string(g.States[at]), "the grid")
		})
	}
}
