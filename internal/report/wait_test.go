package report

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

func TestWait(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)
	ro := func(name, freight string, phase fleetv1alpha1.RolloutPhase, age time.Duration) fleetv1alpha1.FleetRollout {
		r := fleetv1alpha1.FleetRollout{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(at.Add(-age))},
			Spec: fleetv1alpha1.FleetRolloutSpec{FleetStage: "prod", Freight: fleetv1alpha1.FreightReference{Name: freight}}}
		r.Status.Phase = phase
		r.Status.Waves = []fleetv1alpha1.WaveProgress{{Name: "canary", Total: 10, Succeeded: 4, Failed: 1}}
		return r
	}
	rollbackOf := func(of string) fleetv1alpha1.FleetRollout {
		r := ro(of+"-rb", "good", fleetv1alpha1.RolloutProgressing, 0)
		r.Spec.Direction, r.Spec.RollbackOf = fleetv1alpha1.DirectionRollback, of
		return r
	}
	fs := func(current, last string) *fleetv1alpha1.FleetStage {
		f := &fleetv1alpha1.FleetStage{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "prod"}}
		f.Status.CurrentRollout, f.Status.LastRollout = current, last
		return f
	}
	tests := []struct {
		name     string
		fs       *fleetv1alpha1.FleetStage
		rollouts []fleetv1alpha1.FleetRollout
		wait     WaitFor
		want     WaitState
		line     string
	}{
		{name: "the promoted Freight's rollout does not exist yet", fs: fs("", "prod-old"),
			rollouts: []fleetv1alpha1.FleetRollout{ro("prod-old", "old", fleetv1alpha1.RolloutSucceeded, time.Hour)},
			wait:     WaitFor{Freight: "new"}, want: WaitState{},
			line: "waiting for the rollout of Freight new to start"},
		{name: "running", fs: fs("prod-new", "prod-old"),
			rollouts: []fleetv1alpha1.FleetRollout{ro("prod-new", "new", fleetv1alpha1.RolloutProgressing, 0)},
			wait:     WaitFor{Freight: "new"}, want: WaitState{Rollout: "prod-new"}, line: "Progressing; canary 4/10 (1 failed)"},
		{name: "succeeded", fs: fs("", "prod-new"),
			rollouts: []fleetv1alpha1.FleetRollout{ro("prod-new", "new", fleetv1alpha1.RolloutSucceeded, 0)},
			want:     WaitState{Rollout: "prod-new", Done: true, Code: ExitSucceeded}},
		{name: "halted, no automatic rollback", fs: fs("prod-new", ""),
			rollouts: []fleetv1alpha1.FleetRollout{ro("prod-new", "new", fleetv1alpha1.RolloutHalted, 0)},
			want:     WaitState{Rollout: "prod-new", Done: true, Code: ExitFailed}},
		{name: "rolled back", fs: fs("prod-new-rb", ""),
			rollouts: []fleetv1alpha1.FleetRollout{ro("prod-new", "new", fleetv1alpha1.RolloutFailed, time.Minute), rollbackOf("prod-new")},
			wait:     WaitFor{Freight: "new"},
			want:     WaitState{Rollout: "prod-new", Done: true, Code: ExitRolledBack}, line: "rolled back by prod-new-rb (Progressing)"},
		{name: "aborted", fs: fs("", "prod-new"),
			rollouts: []fleetv1alpha1.FleetRollout{ro("prod-new", "new", fleetv1alpha1.RolloutAborted, 0)},
			want:     WaitState{Rollout: "prod-new", Done: true, Code: ExitAborted}},
		{name: "waits for approval", fs: fs("prod-new", ""),
			rollouts: []fleetv1alpha1.FleetRollout{ro("prod-new", "new", fleetv1alpha1.RolloutWaitingForApproval, 0)},
			want:     WaitState{Rollout: "prod-new", Done: true, Code: ExitWaiting}},
		{name: "waits for approval, waited through", fs: fs("prod-new", ""),
			rollouts: []fleetv1alpha1.FleetRollout{ro("prod-new", "new", fleetv1alpha1.RolloutWaitingForApproval, 0)},
			wait:     WaitFor{ThroughApprovals: true}, want: WaitState{Rollout: "prod-new"}},
		{name: "the newest of a Freight's rollouts", fs: fs("", ""),
			rollouts: []fleetv1alpha1.FleetRollout{ro("prod-new-1", "new", fleetv1alpha1.RolloutAborted, time.Hour),
				ro("prod-new-2", "new", fleetv1alpha1.RolloutSucceeded, time.Minute)},
			wait: WaitFor{Freight: "new"}, want: WaitState{Rollout: "prod-new-2", Done: true, Code: ExitSucceeded}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := Wait(tt.fs, tt.rollouts, tt.wait)
			require.Contains(t, got.Line, tt.line)
			got.Line = ""
			require.Equal(t, tt.want, got)
		})
	}
}
