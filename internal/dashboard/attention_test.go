package dashboard

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

func attentionRollout(name string, phase fleetv1alpha1.RolloutPhase, msg string) fleetv1alpha1.FleetRollout {
	ro := fleetv1alpha1.FleetRollout{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name},
		Spec: fleetv1alpha1.FleetRolloutSpec{FleetStage: "prod", Direction: fleetv1alpha1.DirectionForward,
			Freight: fleetv1alpha1.FreightReference{Name: "1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d"}}}
	ro.Status.Phase, ro.Status.Message = phase, msg
	ro.Status.Waves = []fleetv1alpha1.WaveProgress{{Name: "pilot", Total: 2, Succeeded: 2}, {Name: "rest", Total: 8, Succeeded: 3}}
	return ro
}

func TestFleetAttention(t *testing.T) {
	t.Parallel()
	halted := attentionRollout("prod-1", fleetv1alpha1.RolloutHalted, `wave "canary" breached its failure threshold`)
	rollback := attentionRollout("prod-1-rb", fleetv1alpha1.RolloutRollingBack, "")
	rollback.Spec.Direction, rollback.Spec.RollbackOf = fleetv1alpha1.DirectionRollback, "prod-1"
	paused := attentionRollout("prod-2", fleetv1alpha1.RolloutPaused, "")
	paused.Spec.Intent = fleetv1alpha1.IntentPause
	paused.Annotations = map[string]string{fleetv1alpha1.IntentActorAnnotation: "kubernetes:alice"}

	tests := []struct {
		name     string
		current  string
		last     string
		drift    int32
		apps     *fleetv1alpha1.ApplicationDriftStatus
		notReady bool
		rollouts []fleetv1alpha1.FleetRollout
		want     Attention
	}{
		{name: "no rollout yet", want: Attention{AttentionHealthy, "No rollout yet"}},
		{
			name: "halted on a breach", current: "prod-1", rollouts: []fleetv1alpha1.FleetRollout{halted},
			want: Attention{AttentionFailed, `prod-1 halted: wave "canary" breached its failure threshold`},
		},
		{
			name: "right after a breach the rollback is current: the breach still says why", current: "prod-1-rb",
			rollouts: []fleetv1alpha1.FleetRollout{halted, rollback},
			want:     Attention{AttentionFailed, `prod-1 halted and is being rolled back: wave "canary" breached its failure threshold`},
		},
		{
			name: "waiting for approval", current: "prod-3", drift: 2,
			rollouts: []fleetv1alpha1.FleetRollout{attentionRollout("prod-3", fleetv1alpha1.RolloutWaitingForApproval,
				"waiting for approval: kargo approve --project shop --freight 1a2b3c4 --stage prod-critical")},
			want: Attention{AttentionApproval, "waiting for approval: kargo approve --project shop --freight 1a2b3c4 --stage prod-critical"},
		},
		{
			name: "drifted, with a rollout progressing", current: "prod-4", drift: 3,
			rollouts: []fleetv1alpha1.FleetRollout{attentionRollout("prod-4", fleetv1alpha1.RolloutProgressing, "")},
			want:     Attention{AttentionDrifted, "3 target(s) run Freight the fleet does not intend"},
		},
		{
			name: "Applications changed outside the fleet", apps: &fleetv1alpha1.ApplicationDriftStatus{Foreign: 2, Broken: 1},
			want: Attention{AttentionDrifted, "2 target Application(s) changed outside the fleet, 1 broken (Argo CD)"},
		},
		{
			name: "an Application synced by break-glass only", apps: &fleetv1alpha1.ApplicationDriftStatus{Intended: 1},
			want: Attention{AttentionHealthy, "No rollout yet"},
		},
		{
			name: "paused", current: "prod-2", rollouts: []fleetv1alpha1.FleetRollout{paused},
			want: Attention{AttentionPaused, "prod-2 paused by kubernetes:alice"},
		},
		{
			name: "progressing", current: "prod-4",
			rollouts: []fleetv1alpha1.FleetRollout{attentionRollout("prod-4", fleetv1alpha1.RolloutProgressing, "")},
			want:     Attention{AttentionProgressing, "prod-4: Forward to 1a2b3c4, 5/10 targets"},
		},
		{
			name: "last rollout failed, nothing running", last: "prod-5",
			rollouts: []fleetv1alpha1.FleetRollout{attentionRollout("prod-5", fleetv1alpha1.RolloutFailed, "deadline exceeded")},
			want:     Attention{AttentionFailed, "prod-5 failed: deadline exceeded"},
		},
		{
			name: "last rollout aborted", last: "prod-6",
			rollouts: []fleetv1alpha1.FleetRollout{attentionRollout("prod-6", fleetv1alpha1.RolloutAborted, "")},
			want:     Attention{AttentionPaused, "prod-6 aborted"},
		},
		{
			name: "last rollout succeeded", last: "prod-7",
			rollouts: []fleetv1alpha1.FleetRollout{attentionRollout("prod-7", fleetv1alpha1.RolloutSucceeded, "")},
			want:     Attention{AttentionHealthy, "prod-7 succeeded"},
		},
		{
			name: "not ready comes first", notReady: true, current: "prod-4",
			rollouts: []fleetv1alpha1.FleetRollout{attentionRollout("prod-4", fleetv1alpha1.RolloutProgressing, "")},
			want:     Attention{AttentionFailed, "Not ready (SourceUnavailable): error listing Argo CD cluster Secrets"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fs := testutil.MakeFleetStage("shop", "prod").Obj()
			fs.Status.CurrentRollout, fs.Status.LastRollout = tt.current, tt.last
			if tt.drift > 0 {
				fs.Status.Drift = &fleetv1alpha1.DriftStatus{Count: tt.drift}
			}
			fs.Status.Applications = tt.apps
			if tt.notReady {
				fs.Status.Conditions = []metav1.Condition{{Type: fleetv1alpha1.ReadyCondition, Status: metav1.ConditionFalse,
					Reason: "SourceUnavailable", Message: "error listing Argo CD cluster Secrets"}}
			}
			require.Equal(t, tt.want, FleetAttention(fs, tt.rollouts))
		})
	}
}

func Test_attentionFirst(t *testing.T) {
	t.Parallel()
	fleets := []FleetStageSummary{
		{Name: "a-healthy", Attention: Attention{Level: AttentionHealthy}},
		{Name: "b-progressing", Attention: Attention{Level: AttentionProgressing}},
		{Name: "c-paused", Attention: Attention{Level: AttentionPaused}},
		{Name: "d-drifted", Attention: Attention{Level: AttentionDrifted}},
		{Name: "e-approval", Attention: Attention{Level: AttentionApproval}},
		{Name: "f-failed", Attention: Attention{Level: AttentionFailed}},
		{Name: "a-failed", Attention: Attention{Level: AttentionFailed}},
	}
	slices.SortFunc(fleets, attentionFirst)
	names := make([]string, len(fleets))
	for i, f := range fleets {
		names[i] = f.Name
	}
	require.Equal(t, []string{"a-failed", "f-failed", "e-approval", "d-drifted", "c-paused", "b-progressing", "a-healthy"}, names)
	require.Equal(t, 0, ProjectView{FleetStages: fleets}.mostUrgent())
	require.Equal(t, attentionRank[AttentionHealthy]+1, ProjectView{}.mostUrgent())
}
