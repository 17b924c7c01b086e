package rollout

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetrollout"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
	"github.com/kargo-fleet/kargo-fleet/internal/render"
)

// rollbackAnswer is one path's answer to "roll this fleet back": which
// rollout (Of), to which Freight, refused why, answered by which existing
// rollback, or which attempt to create.
type rollbackAnswer struct {
	Of       string
	Freight  string
	Refused  RollbackReason
	Existing string
	Attempt  int
}

func answerOf(p RollbackPlan) rollbackAnswer {
	a := rollbackAnswer{Freight: p.Freight.Name}
	if p.Of != nil {
		a.Of = p.Of.Name
	}
	switch {
	case p.Refused != nil:
		return rollbackAnswer{Of: a.Of, Refused: p.Refused.Reason}
	case p.Existing != nil:
		a.Existing = p.Existing.Name
	default:
		a.Attempt = p.Attempt
	}
	return a
}

// The entry points of the paths that roll a fleet back, each as the path
// calls the decision with what it read (the I/O around them only reads
// objects before, and writes the answer after).

// cliPath is `kargo-fleet rollback prod` (internal/cli rollback.go).
func cliPath(f *rbFleet, of, freight string) rollbackAnswer {
	return answerOf(PlanRollback(RollbackRequest{Asker: AskedByCLI, FleetStage: f.fs, Rollouts: f.rollouts, Of: of, Freight: freight}))
}

// stepPath is a fleet-rollback step call of a new Promotion (steps
// rollback.go resolve).
func stepPath(f *rbFleet, of, freight string) rollbackAnswer {
	return answerOf(PlanRollback(RollbackRequest{Asker: AskedByStep, FleetStage: f.fs, Rollouts: f.rollouts, Of: of, Freight: freight,
		StepKey: fleetrollout.StepKey("prod-rollback.01new.f", "rollback::start")}))
}

// gesturePath is a person's Promote of the Freight into the first wave
// Stage in the Kargo UI, read by the fleet-wave step (steps wave_gesture.go)
// and the Promotion webhook alike, then carried out by the step's rollback.
// A Promote that means no rollback answers with nothing.
func gesturePath(f *rbFleet, freight string) rollbackAnswer {
	p := kargo.NewPromotion("shop", render.WaveStageName("prod", "pilot"), freight, nil, nil)
	p.Name = "prod-pilot.01gesture." + freight
	req, ok := GestureRequest(f.fs, f.rollouts, StageWave, GesturePromoteWaveStage, p)
	if !ok {
		return rollbackAnswer{}
	}
	reading := ReadKargoUIGesture(req)
	if reading.Action != ActionRollback {
		return rollbackAnswer{}
	}
	return answerOf(PlanRollback(RollbackRequest{Asker: AskedByStep, FleetStage: f.fs, Rollouts: f.rollouts, Of: reading.Rollout,
		Freight: freight, StepKey: fleetrollout.StepKey(p.Name, "wave::start")}))
}

// policyPath is the rollout controller's automatic rollback at the breach
// of of (fleetrollout_apply.go ensureRollback).
func policyPath(f *rbFleet, of string) rollbackAnswer {
	return answerOf(PlanRollback(RollbackRequest{Asker: AskedByPolicy, FleetStage: f.fs, Rollouts: f.rollouts, Of: of}))
}

// objectPath is the rollout controller planning the rollback object that
// answer asks to create (fleetrollout_snapshot.go rollbackPlan): it runs
// what any asker created.
func objectPath(f *rbFleet, answer rollbackAnswer) rollbackAnswer {
	of := findRollout(f.rollouts, answer.Of)
	rb := fleetrollout.NewRollback(fleetrollout.Rollback{Of: of, Freight: fleetv1alpha1.FreightReference{Name: answer.Freight},
		Attempt: answer.Attempt})
	rb.CreationTimestamp.Time = time.Date(2026, 11, 22, 23, 0, 0, 0, time.UTC)
	got := answerOf(PlanRollback(RollbackRequest{Asker: AskedByObject, FleetStage: f.fs, Rollouts: append(f.rollouts, rb), Rollback: rb}))
	if got.Refused == "" {
		got.Attempt = fleetrollout.RollbackAttempt(rb.Name, of.Name)
	}
	return got
}

// statusPath is the advice `kargo-fleet status` prints (internal/cli
// status.go), read as the answer of the `kargo-fleet rollback` it names:
// a rollback or a retry creates the next attempt, a resume is the paused
// rollback's; no advice is a refusal or a rollback under way.
func statusPath(f *rbFleet) (rollbackAnswer, RecoveryAction) {
	r := PlanRecovery(f.fs, f.rollouts)
	a := rollbackAnswer{Freight: r.Freight}
	if r.Of != nil {
		a.Of = r.Of.Name
	}
	switch r.Action {
	case RecoveryRollback:
		a.Attempt = 1
	case RecoveryRetry:
		a.Attempt = fleetrollout.RollbackAttempt(r.Rollback.Name, a.Of) + 1
	case RecoveryResume:
		a.Existing = r.Rollback.Name
	}
	return a, r.Action
}

// rbAttempt is attempt n of prod-bad's rollback, in phase.
func rbAttempt(n int, phase fleetv1alpha1.RolloutPhase) *fleetv1alpha1.FleetRollout {
	return rbOf(rbRollout(fleetrollout.RollbackAttemptName("prod-bad", n), fleetv1alpha1.DirectionRollback, rbGood, phase,
		time.Duration(2+n)*time.Hour), "prod-bad")
}

// fleetHistories are the shared fixture: newRBFleet (prod-older and
// prod-good succeeded, prod-bad breached and halted, rbGood the last good
// Freight) with the history each case adds.
var fleetHistories = []struct {
	name  string
	fleet func() *rbFleet
	// want is what every person's ask with nothing named gets.
	want rollbackAnswer
	// wantPolicy is the automatic policy's answer at prod-bad's breach: it
	// asks once, so any rollback of the rollout answers it.
	wantPolicy rollbackAnswer
	// wantAdvice is what status advises.
	wantAdvice RecoveryAction
}{
	{
		name:       "breached current rollout",
		fleet:      newRBFleet,
		want:       rollbackAnswer{Of: "prod-bad", Freight: rbGood, Attempt: 1},
		wantPolicy: rollbackAnswer{Of: "prod-bad", Freight: rbGood, Attempt: 1},
		wantAdvice: RecoveryRollback,
	},
	{
		name: "stale current-rollout name in status",
		fleet: func() *rbFleet {
			f := newRBFleet()
			f.fs.Status.CurrentRollout, f.fs.Status.LastRollout = "prod-deleted", "prod-bad"
			return f
		},
		want:       rollbackAnswer{Of: "prod-bad", Freight: rbGood, Attempt: 1},
		wantPolicy: rollbackAnswer{Of: "prod-bad", Freight: rbGood, Attempt: 1},
		wantAdvice: RecoveryRollback,
	},
	{
		name: "stale current and last names, an aborted rollout newest",
		fleet: func() *rbFleet {
			f := newRBFleet()
			aborted := rbRollout("prod-aborted", fleetv1alpha1.DirectionForward, rbOlder, fleetv1alpha1.RolloutAborted, 3*time.Hour)
			f.with(aborted)
			f.fs.Status.CurrentRollout, f.fs.Status.LastRollout = "prod-deleted", "prod-gone"
			return f
		},
		want:       rollbackAnswer{Of: "prod-aborted", Freight: rbGood, Attempt: 1},
		wantPolicy: rollbackAnswer{Of: "prod-bad", Freight: rbGood, Attempt: 1},
		wantAdvice: RecoveryRollback,
	},
	{
		name: "the last good Freight held back after a later breach",
		fleet: func() *rbFleet {
			return newRBFleet().with(rbBreached(rbRollout("prod-good-again", fleetv1alpha1.DirectionForward, rbGood,
				fleetv1alpha1.RolloutFailed, 90*time.Minute)))
		},
		want:       rollbackAnswer{Of: "prod-bad", Refused: RollbackHeldBack},
		wantPolicy: rollbackAnswer{Of: "prod-bad", Refused: RollbackHeldBack},
	},
	{
		name:       "a failed rollback",
		fleet:      func() *rbFleet { return newRBFleet().with(rbAttempt(1, fleetv1alpha1.RolloutFailed)) },
		want:       rollbackAnswer{Of: "prod-bad", Freight: rbGood, Attempt: 2},
		wantPolicy: rollbackAnswer{Of: "prod-bad", Freight: rbGood, Existing: "prod-bad-rb"},
		wantAdvice: RecoveryRetry,
	},
	{
		name: "a failed rollback is the current rollout",
		fleet: func() *rbFleet {
			f := newRBFleet().with(rbAttempt(1, fleetv1alpha1.RolloutAborted), rbAttempt(2, fleetv1alpha1.RolloutFailed))
			f.fs.Status.CurrentRollout = "prod-bad-rb2"
			return f
		},
		want:       rollbackAnswer{Of: "prod-bad", Freight: rbGood, Attempt: 3},
		wantPolicy: rollbackAnswer{Of: "prod-bad", Freight: rbGood, Existing: "prod-bad-rb2"},
		wantAdvice: RecoveryRetry,
	},
	{
		name: "a rollback under way",
		fleet: func() *rbFleet {
			f := newRBFleet().with(rbAttempt(1, fleetv1alpha1.RolloutFailed), rbAttempt(2, fleetv1alpha1.RolloutRollingBack))
			f.fs.Status.CurrentRollout = "prod-bad-rb2"
			return f
		},
		want:       rollbackAnswer{Of: "prod-bad", Freight: rbGood, Existing: "prod-bad-rb2"},
		wantPolicy: rollbackAnswer{Of: "prod-bad", Freight: rbGood, Existing: "prod-bad-rb2"},
	},
	{
		name: "a paused rollback",
		fleet: func() *rbFleet {
			paused := rbAttempt(1, fleetv1alpha1.RolloutPaused)
			paused.Spec.Intent = fleetv1alpha1.IntentPause
			return newRBFleet().with(paused)
		},
		want:       rollbackAnswer{Of: "prod-bad", Freight: rbGood, Existing: "prod-bad-rb"},
		wantPolicy: rollbackAnswer{Of: "prod-bad", Freight: rbGood, Existing: "prod-bad-rb"},
		wantAdvice: RecoveryResume,
	},
	{
		name:       "a succeeded rollback",
		fleet:      func() *rbFleet { return newRBFleet().with(rbAttempt(1, fleetv1alpha1.RolloutSucceeded)) },
		want:       rollbackAnswer{Of: "prod-bad", Freight: rbGood, Existing: "prod-bad-rb"},
		wantPolicy: rollbackAnswer{Of: "prod-bad", Freight: rbGood, Existing: "prod-bad-rb"},
	},
}

// withWaves gives the fleet the waves the Kargo UI gesture reads.
func withWaves(f *rbFleet) *rbFleet {
	f.fs.Spec.Waves = []fleetv1alpha1.Wave{{Name: "pilot"}, {Name: "rest"}}
	return f
}

// TestRollbackPaths asks "roll this fleet back" through every path (the
// CLI, the fleet-rollback step, the Kargo UI gesture, the controller
// planning the rollback object, and status's advice) of one set of fleet
// histories: each path gets the same rollout, Freight, refusal, existing
// rollback and attempt. The automatic policy differs only where its rule
// says: it asks once.
func TestRollbackPaths(t *testing.T) {
	t.Parallel()
	for _, h := range fleetHistories {
		t.Run(h.name, func(t *testing.T) {
			t.Parallel()
			f := withWaves(h.fleet())
			require.Equal(t, h.want, cliPath(f, "", ""), "the CLI")
			require.Equal(t, h.want, stepPath(f, "", ""), "the fleet-rollback step")
			require.Equal(t, h.wantPolicy, policyPath(f, "prod-bad"), "the automatic policy")

			gesture := gesturePath(f, rbGood)
			if h.want.Attempt > 0 {
				require.Equal(t, h.want, gesture, "the Kargo UI gesture")
				require.Equal(t, rollbackAnswer{Of: h.want.Of, Freight: h.want.Freight, Attempt: h.want.Attempt}, objectPath(f, h.want),
					"the controller runs the rollback the others create")
			} else {
				require.Equal(t, rollbackAnswer{}, gesture, "a Promote that rolls nothing back is an ordinary Promotion")
			}

			advice, action := statusPath(f)
			require.Equal(t, h.wantAdvice, action, "status's advice")
			switch action {
			case RecoveryRollback, RecoveryRetry, RecoveryResume:
				require.Equal(t, h.want, advice, "status advises what kargo-fleet rollback does")
			default:
				require.Equal(t, h.want.Of, advice.Of, "status names the rollout kargo-fleet rollback would")
			}
		})
	}
}

// TestRollbackPaths_named: a rollout or Freight named gets the same answer
// through the CLI (--of, --to), the step (rollbackOf, freight), a rollback
// object the controller plans, and the FleetRollout webhook's rules.
func TestRollbackPaths_named(t *testing.T) {
	t.Parallel()
	otherFleet := func() *rbFleet {
		other := rbRollout("staging-bad", fleetv1alpha1.DirectionForward, rbBad, fleetv1alpha1.RolloutHalted, 0)
		other.Spec.FleetStage = "staging"
		return newRBFleet().with(other)
	}
	heldBack := func() *rbFleet {
		return newRBFleet().with(rbBreached(rbRollout("prod-older-again", fleetv1alpha1.DirectionForward, rbOlder,
			fleetv1alpha1.RolloutFailed, 90*time.Minute)))
	}
	for _, tc := range []struct {
		name        string
		fleet       func() *rbFleet
		of, freight string
		want        rollbackAnswer
	}{
		{name: "another FleetStage's rollout", fleet: otherFleet, of: "staging-bad",
			want: rollbackAnswer{Of: "staging-bad", Refused: RollbackOtherFleetStage}},
		{name: "held-back Freight", fleet: heldBack, of: "prod-bad", freight: rbOlder,
			want: rollbackAnswer{Of: "prod-bad", Refused: RollbackHeldBack}},
		{name: "Freight that never passed the fleet", fleet: newRBFleet, of: "prod-bad", freight: "f00d",
			want: rollbackAnswer{Of: "prod-bad", Refused: RollbackNotProven}},
		{name: "Freight that passed the fleet", fleet: newRBFleet, of: "prod-bad", freight: rbOlder,
			want: rollbackAnswer{Of: "prod-bad", Freight: rbOlder, Attempt: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := tc.fleet()
			require.Equal(t, tc.want, cliPath(f, tc.of, tc.freight), "the CLI")
			require.Equal(t, tc.want, stepPath(f, tc.of, tc.freight), "the fleet-rollback step")
			object := objectPath(f, rollbackAnswer{Of: tc.of, Freight: tc.freight, Attempt: 1})
			require.Equal(t, tc.want, object, "the controller planning a rollback object")

			of := findRollout(f.rollouts, tc.of)
			reason, _ := CheckRollbackOf("prod", of)
			if reason == "" {
				reason, _ = CheckRollbackFreight(f.fs, ofFleetStage(f.rollouts, "prod"), tc.freight)
			}
			require.Equal(t, tc.want.Refused, reason, "the FleetRollout webhook")
		})
	}
}

// TestRollbackPaths_targets: which targets a retry returns is answered by
// Waves from the targets the rollout moved and those earlier attempts
// returned (EarlierAttempts names them): the controller reads both, and
// nothing else decides it.
func TestRollbackPaths_targets(t *testing.T) {
	t.Parallel()
	f := newRBFleet().with(rbAttempt(1, fleetv1alpha1.RolloutAborted), rbAttempt(2, fleetv1alpha1.RolloutFailed))
	p := PlanRollback(RollbackRequest{Asker: AskedByCLI, FleetStage: f.fs, Rollouts: f.rollouts})
	require.Equal(t, 3, p.Attempt)
	rb := fleetrollout.NewRollback(fleetrollout.Rollback{Of: p.Of, Freight: p.Freight, Attempt: p.Attempt})
	require.Equal(t, []string{"prod-bad-rb", "prod-bad-rb2"}, EarlierAttempts(rb))
	require.Empty(t, EarlierAttempts(fleetrollout.NewRollback(fleetrollout.Rollback{Of: p.Of, Freight: p.Freight})))

	of := &plan.WavePlan{Hash: "h", Waves: []plan.PlannedWave{
		{Name: "pilot", Members: []plan.Target{{ID: "p1"}, {ID: "p2"}}},
		{Name: "rest", Members: []plan.Target{{ID: "r1"}, {ID: "r2"}, {ID: "r3"}}},
	}}
	moved := map[string]bool{"p1": true, "p2": true, "r1": true, "r2": true}
	returnedByEarlier := map[string]bool{"r1": true, "p2": true}
	got := p.Waves(of, moved, returnedByEarlier)
	require.Equal(t, []plan.PlannedWave{
		{Name: "rest", Approval: fleetv1alpha1.ApprovalNone, Members: []plan.Target{{ID: "r2"}}},
		{Name: "pilot", Approval: fleetv1alpha1.ApprovalNone, Members: []plan.Target{{ID: "p1"}}},
	}, got.Waves)
}
