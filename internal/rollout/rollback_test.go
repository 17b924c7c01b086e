package rollout

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetrollout"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

const (
	rbGood  = "1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d"
	rbBad   = "9f8e7d6c5b4a39281706f5e4d3c2b1a09f8e7d6c"
	rbOlder = "c0ffeec0ffeec0ffeec0ffeec0ffeec0ffeec0ff"
)

// rbRollout builds a FleetRollout of shop/prod created age after 09:00.
func rbRollout(name string, dir fleetv1alpha1.RolloutDirection, freight string, phase fleetv1alpha1.RolloutPhase,
	age time.Duration) *fleetv1alpha1.FleetRollout {
	return &fleetv1alpha1.FleetRollout{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name,
			CreationTimestamp: metav1.NewTime(time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC).Add(age)),
			Labels:            map[string]string{fleetv1alpha1.FleetStageLabel: "prod"}},
		Spec:   fleetv1alpha1.FleetRolloutSpec{FleetStage: "prod", Direction: dir, Freight: fleetv1alpha1.FreightReference{Name: freight}},
		Status: fleetv1alpha1.FleetRolloutStatus{Phase: phase},
	}
}

func rbBreached(ro *fleetv1alpha1.FleetRollout) *fleetv1alpha1.FleetRollout {
	meta.SetStatusCondition(&ro.Status.Conditions, metav1.Condition{Type: fleetv1alpha1.ThresholdBreachedCondition,
		Status: metav1.ConditionTrue, Reason: string(plan.HaltWaveThreshold), Message: "2 of 4 failed"})
	return ro
}

func rbOf(ro *fleetv1alpha1.FleetRollout, of string) *fleetv1alpha1.FleetRollout {
	ro.Spec.RollbackOf = of
	return ro
}

// rbFleet is the FleetStage prod: its current rollout prod-bad (Freight
// rbBad) breached; rbGood is the last good Freight; rbOlder passed the
// fleet before it.
type rbFleet struct {
	fs       *fleetv1alpha1.FleetStage
	rollouts []*fleetv1alpha1.FleetRollout
}

func newRBFleet() *rbFleet {
	fs := testutil.MakeFleetStage("shop", "prod").Obj()
	fs.Spec.Policy.Rollback.Mode = fleetv1alpha1.RollbackAutomatic
	fs.Status.CurrentRollout, fs.Status.LastRollout = "prod-bad", "prod-good"
	fs.Status.LastGoodFreight = &fleetv1alpha1.FreightReference{Name: rbGood,
		Origin: &fleetv1alpha1.FreightOrigin{Kind: "Warehouse", Name: "apps"}}
	return &rbFleet{fs: fs, rollouts: []*fleetv1alpha1.FleetRollout{
		rbRollout("prod-older", fleetv1alpha1.DirectionForward, rbOlder, fleetv1alpha1.RolloutSucceeded, 0),
		rbRollout("prod-good", fleetv1alpha1.DirectionForward, rbGood, fleetv1alpha1.RolloutSucceeded, time.Hour),
		rbBreached(rbRollout("prod-bad", fleetv1alpha1.DirectionForward, rbBad, fleetv1alpha1.RolloutHalted, 2*time.Hour)),
	}}
}

func (f *rbFleet) with(ros ...*fleetv1alpha1.FleetRollout) *rbFleet {
	f.rollouts = append(f.rollouts, ros...)
	return f
}

func (f *rbFleet) request(asker RollbackAsker, of, freight string) RollbackRequest {
	return RollbackRequest{Asker: asker, FleetStage: f.fs, Rollouts: f.rollouts, Of: of, Freight: freight}
}

func TestPlanRollback(t *testing.T) {
	t.Parallel()
	const (
		fwd = fleetv1alpha1.DirectionForward
		rb  = fleetv1alpha1.DirectionRollback
	)
	tests := []struct {
		name        string
		req         func() RollbackRequest
		wantReason  RollbackReason
		wantMessage string
		wantHint    string
		wantOf      string
		wantFreight string
		wantExist   string
		// wantAttempt, for a rollback to create, is its attempt (default 1).
		wantAttempt int
	}{
		{
			name:        "the policy rolls a breached rollout back to the last good Freight",
			req:         func() RollbackRequest { return newRBFleet().request(AskedByPolicy, "prod-bad", "") },
			wantOf:      "prod-bad",
			wantFreight: rbGood,
		},
		{
			name: "the policy says nothing under mode Manual",
			req: func() RollbackRequest {
				f := newRBFleet()
				f.fs.Spec.Policy.Rollback.Mode = fleetv1alpha1.RollbackManual
				return f.request(AskedByPolicy, "prod-bad", "")
			},
			wantReason: RollbackNotAutomatic,
			wantOf:     "prod-bad",
		},
		{
			name:       "the policy says nothing for a rollout that did not breach",
			req:        func() RollbackRequest { return newRBFleet().request(AskedByPolicy, "prod-good", "") },
			wantReason: RollbackNotBreached,
			wantOf:     "prod-good",
		},
		{
			name:        "a step with no config rolls back the current rollout",
			req:         func() RollbackRequest { return newRBFleet().request(AskedByStep, "", "") },
			wantOf:      "prod-bad",
			wantFreight: rbGood,
		},
		{
			name: "without a current rollout, the last one",
			req: func() RollbackRequest {
				f := newRBFleet()
				f.fs.Status.CurrentRollout, f.fs.Status.LastRollout = "", "prod-bad"
				return f.request(AskedByCLI, "", "")
			},
			wantOf:      "prod-bad",
			wantFreight: rbGood,
		},
		{
			name: "without a current or last rollout, the newest forward rollout",
			req: func() RollbackRequest {
				f := newRBFleet()
				f.fs.Status.CurrentRollout, f.fs.Status.LastRollout = "", ""
				return f.request(AskedByCLI, "", "")
			},
			wantOf:      "prod-bad",
			wantFreight: rbGood,
		},
		{
			name: "a stale current rollout name (its object deleted): the last one",
			req: func() RollbackRequest {
				f := newRBFleet()
				f.fs.Status.CurrentRollout, f.fs.Status.LastRollout = "prod-deleted", "prod-bad"
				return f.request(AskedByCLI, "", "")
			},
			wantOf:      "prod-bad",
			wantFreight: rbGood,
		},
		{
			name: "stale current and last rollout names: the newest forward rollout",
			req: func() RollbackRequest {
				f := newRBFleet()
				f.fs.Status.CurrentRollout, f.fs.Status.LastRollout = "prod-deleted", "prod-gone"
				return f.request(AskedByStep, "", "")
			},
			wantOf:      "prod-bad",
			wantFreight: rbGood,
		},
		{
			name: "a FleetStage without rollouts has nothing to roll back",
			req: func() RollbackRequest {
				f := newRBFleet()
				f.fs.Status.CurrentRollout, f.fs.Status.LastRollout, f.rollouts = "", "", nil
				return f.request(AskedByStep, "", "")
			},
			wantReason:  RollbackNoRollout,
			wantMessage: `FleetStage "prod" has no rollout to roll back`,
		},
		{
			name:        "a rollout that does not exist",
			req:         func() RollbackRequest { return newRBFleet().request(AskedByCLI, "prod-gone", "") },
			wantReason:  RollbackRolloutNotFound,
			wantMessage: `FleetRollout "prod-gone" not found in namespace "shop"`,
		},
		{
			name: "a rollout of another FleetStage",
			req: func() RollbackRequest {
				other := rbRollout("staging-bad", fwd, rbBad, fleetv1alpha1.RolloutHalted, 0)
				other.Spec.FleetStage = "staging"
				return newRBFleet().with(other).request(AskedByStep, "staging-bad", "")
			},
			wantReason:  RollbackOtherFleetStage,
			wantMessage: `FleetRollout "staging-bad" belongs to FleetStage "staging", not "prod"`,
			wantOf:      "staging-bad",
		},
		{
			name: "a rollout that has a rollback: that one is the answer",
			req: func() RollbackRequest {
				return newRBFleet().with(rbOf(rbRollout("prod-bad-rb", rb, rbGood, fleetv1alpha1.RolloutRollingBack, 3*time.Hour), "prod-bad")).
					request(AskedByPolicy, "prod-bad", "")
			},
			wantOf:      "prod-bad",
			wantExist:   "prod-bad-rb",
			wantFreight: rbGood,
		},
		{
			name: "the current rollout is a rollback: asking means that rollback",
			req: func() RollbackRequest {
				f := newRBFleet().with(rbOf(rbRollout("prod-bad-rb", rb, rbGood, fleetv1alpha1.RolloutRollingBack, 3*time.Hour), "prod-bad"))
				f.fs.Status.CurrentRollout = "prod-bad-rb"
				return f.request(AskedByStep, "", "")
			},
			wantOf:      "prod-bad",
			wantExist:   "prod-bad-rb",
			wantFreight: rbGood,
		},
		{
			name: "a rollback whose rollout is gone",
			req: func() RollbackRequest {
				return newRBFleet().with(rbOf(rbRollout("prod-x-rb", rb, rbGood, fleetv1alpha1.RolloutSucceeded, 3*time.Hour), "prod-x")).
					request(AskedByCLI, "prod-x-rb", "")
			},
			wantReason: RollbackRolloutNotFound,
		},
		{
			name: "a rollback attempt that was aborted no longer counts: the next attempt is planned",
			req: func() RollbackRequest {
				return newRBFleet().with(rbOf(rbRollout("prod-bad-rb", rb, rbGood, fleetv1alpha1.RolloutAborted, 3*time.Hour), "prod-bad")).
					request(AskedByCLI, "prod-bad", "")
			},
			wantOf:      "prod-bad",
			wantFreight: rbGood,
			wantAttempt: 2,
		},
		{
			name: "an attempt that failed is retried by the next person's ask, step or CLI alike",
			req: func() RollbackRequest {
				return newRBFleet().with(
					rbOf(rbRollout(fleetrollout.RollbackAttemptName("prod-bad", 1), rb, rbGood, fleetv1alpha1.RolloutAborted, 3*time.Hour), "prod-bad"),
					rbOf(rbRollout(fleetrollout.RollbackAttemptName("prod-bad", 2), rb, rbGood, fleetv1alpha1.RolloutFailed, 4*time.Hour), "prod-bad")).
					request(AskedByStep, "", "")
			},
			wantOf:      "prod-bad",
			wantFreight: rbGood,
			wantAttempt: 3,
		},
		{
			name: "the policy asks once: its rollback answers it however it ended",
			req: func() RollbackRequest {
				return newRBFleet().with(rbOf(rbRollout("prod-bad-rb", rb, rbGood, fleetv1alpha1.RolloutFailed, 3*time.Hour), "prod-bad")).
					request(AskedByPolicy, "prod-bad", "")
			},
			wantOf:      "prod-bad",
			wantExist:   "prod-bad-rb",
			wantFreight: rbGood,
		},
		{
			name: "a step called again gets the rollback it started, however it ended",
			req: func() RollbackRequest {
				own := rbOf(rbRollout("prod-bad-rb", rb, rbGood, fleetv1alpha1.RolloutAborted, 3*time.Hour), "prod-bad")
				own.Annotations = map[string]string{fleetv1alpha1.StepKeyAnnotation: fleetrollout.StepKey("prod-pilot.1.f", "rollback")}
				r := newRBFleet().with(own).request(AskedByStep, "", "")
				r.StepKey = fleetrollout.StepKey("prod-pilot.1.f", "rollback")
				return r
			},
			wantOf:      "prod-bad",
			wantExist:   "prod-bad-rb",
			wantFreight: rbGood,
		},
		{
			name: "after the last attempt ended short there is none left",
			req: func() RollbackRequest {
				f := newRBFleet()
				for n := 1; n <= fleetrollout.MaxRollbackAttempts; n++ {
					f.with(rbOf(rbRollout(fleetrollout.RollbackAttemptName("prod-bad", n), rb, rbGood, fleetv1alpha1.RolloutFailed,
						time.Duration(2+n)*time.Hour), "prod-bad"))
				}
				return f.request(AskedByCLI, "prod-bad", "")
			},
			wantReason:  RollbackAttemptsExhausted,
			wantMessage: `FleetRollout "prod-bad" was rolled back 5 times already, the last time by "prod-bad-rb5" (Failed)`,
			wantHint:    "promote the Freight to return to through Kargo instead",
			wantOf:      "prod-bad",
		},
		{
			name: "an existing rollback asked for other Freight is refused with its name",
			req: func() RollbackRequest {
				return newRBFleet().with(rbOf(rbRollout("prod-bad-rb", rb, rbGood, fleetv1alpha1.RolloutSucceeded, 3*time.Hour), "prod-bad")).
					request(AskedByStep, "prod-bad", rbOlder)
			},
			wantReason: RollbackAlreadyExists,
			wantMessage: `FleetRollout "prod-bad-rb" already rolls back "prod-bad" to Freight ` + rbGood + ` (Succeeded); a rollout has ` +
				`one rollback at a time: to move the fleet to Freight ` + rbOlder + `, promote it through Kargo`,
			wantOf: "prod-bad",
		},
		{
			name: "no last good Freight",
			req: func() RollbackRequest {
				f := newRBFleet()
				f.fs.Status.LastGoodFreight = nil
				return f.request(AskedByPolicy, "prod-bad", "")
			},
			wantReason:  RollbackNoLastGoodFreight,
			wantMessage: `FleetStage "prod" has no last good Freight`,
			wantHint:    "roll back by hand to a Freight you name (kargo-fleet rollback --to), or promote a Freight through Kargo",
			wantOf:      "prod-bad",
		},
		{
			name: "the last good Freight is the rollout's own",
			req: func() RollbackRequest {
				f := newRBFleet()
				f.fs.Status.LastGoodFreight.Name = rbBad
				return f.request(AskedByCLI, "prod-bad", "")
			},
			wantReason: RollbackNoLastGoodFreight,
			wantMessage: `FleetRollout "prod-bad" already moves the fleet to Freight 9f8e7d6, the last good Freight of ` +
				`FleetStage "prod": there is no other to return to`,
			wantHint: "name one with --to",
			wantOf:   "prod-bad",
		},
		{
			name:        "Freight named that the rollout moves to",
			req:         func() RollbackRequest { return newRBFleet().request(AskedByStep, "prod-bad", rbBad) },
			wantReason:  RollbackSameFreight,
			wantMessage: `FleetRollout "prod-bad" moves the fleet to Freight 9f8e7d6, the Freight to return to: nothing to roll back`,
			wantHint:    "set freight to roll back to another",
			wantOf:      "prod-bad",
		},
		{
			name:        "Freight named that passed the fleet",
			req:         func() RollbackRequest { return newRBFleet().request(AskedByCLI, "prod-bad", rbOlder) },
			wantOf:      "prod-bad",
			wantFreight: rbOlder,
		},
		{
			name:       "Freight named that has not passed the fleet",
			req:        func() RollbackRequest { return newRBFleet().request(AskedByCLI, "prod-bad", "f00d") },
			wantReason: RollbackNotProven,
			wantMessage: `Freight f00d has not passed FleetStage "prod" (no rollout of it succeeded, and it is not the last ` +
				`good Freight)`,
			wantHint: "pass --any-freight to roll back to it anyway",
			wantOf:   "prod-bad",
		},
		{
			name: "Freight named that has not passed the fleet, with AnyFreight",
			req: func() RollbackRequest {
				r := newRBFleet().request(AskedByStep, "prod-bad", "f00d")
				r.AnyFreight = true
				return r
			},
			wantOf:      "prod-bad",
			wantFreight: "f00d",
		},
		{
			name: "the last good Freight held back after a later breach",
			req: func() RollbackRequest {
				return newRBFleet().with(rbBreached(rbRollout("prod-good-again", fwd, rbGood, fleetv1alpha1.RolloutFailed, 90*time.Minute))).
					request(AskedByPolicy, "prod-bad", "")
			},
			wantReason:  RollbackHeldBack,
			wantMessage: `Freight 1a2b3c4 is held back from FleetStage "prod" after FleetRollout prod-good-again breached a failure threshold`,
			wantOf:      "prod-bad",
		},
		{
			name: "held-back Freight the FleetStage retries is not held back",
			req: func() RollbackRequest {
				f := newRBFleet().with(rbBreached(rbRollout("prod-good-again", fwd, rbGood, fleetv1alpha1.RolloutFailed, 90*time.Minute)))
				f.fs.Annotations = map[string]string{fleetv1alpha1.RetryFreightAnnotation: rbGood}
				return f.request(AskedByStep, "", "")
			},
			wantOf:      "prod-bad",
			wantFreight: rbGood,
		},
		{
			name: "a breach of another FleetStage holds nothing back here",
			req: func() RollbackRequest {
				other := rbBreached(rbRollout("staging-good", fwd, rbGood, fleetv1alpha1.RolloutFailed, 90*time.Minute))
				other.Spec.FleetStage = "staging"
				return newRBFleet().with(other).request(AskedByCLI, "", "")
			},
			wantOf:      "prod-bad",
			wantFreight: rbGood,
		},
		{
			name: "a rollback object is checked as its creator was",
			req: func() RollbackRequest {
				f := newRBFleet()
				obj := rbOf(rbRollout("prod-bad-rb", rb, "f00d", "", 3*time.Hour), "prod-bad")
				return RollbackRequest{Asker: AskedByObject, FleetStage: f.fs, Rollouts: append(f.rollouts, obj), Rollback: obj}
			},
			wantReason: RollbackNotProven,
			wantHint: `to roll back to it anyway, delete this rollback and create it again with the annotation ` +
				`fleet.kargo-fleet.io/any-freight: "true"`,
			wantOf: "prod-bad",
		},
		{
			name: "a rollback object that allows any Freight",
			req: func() RollbackRequest {
				f := newRBFleet()
				obj := rbOf(rbRollout("prod-bad-rb", rb, "f00d", "", 3*time.Hour), "prod-bad")
				obj.Annotations = map[string]string{fleetv1alpha1.AnyFreightAnnotation: "true"}
				return RollbackRequest{Asker: AskedByObject, FleetStage: f.fs, Rollouts: append(f.rollouts, obj), Rollback: obj}
			},
			wantOf:      "prod-bad",
			wantFreight: "f00d",
		},
		{
			name: "a rollback object of a rollout of another FleetStage",
			req: func() RollbackRequest {
				f := newRBFleet()
				other := rbRollout("staging-bad", fwd, rbBad, fleetv1alpha1.RolloutHalted, 0)
				other.Spec.FleetStage = "staging"
				obj := rbOf(rbRollout("undo-staging", rb, rbGood, "", 3*time.Hour), "staging-bad")
				return RollbackRequest{Asker: AskedByObject, FleetStage: f.fs, Rollouts: append(f.rollouts, other, obj), Rollback: obj}
			},
			wantReason: RollbackOtherFleetStage,
			wantOf:     "staging-bad",
		},
		{
			name: "a rollback object of a rollback",
			req: func() RollbackRequest {
				f := newRBFleet()
				first := rbOf(rbRollout("prod-bad-rb", rb, rbGood, fleetv1alpha1.RolloutSucceeded, 3*time.Hour), "prod-bad")
				obj := rbOf(rbRollout("undo-undo", rb, rbBad, "", 4*time.Hour), "prod-bad-rb")
				return RollbackRequest{Asker: AskedByObject, FleetStage: f.fs, Rollouts: append(f.rollouts, first, obj), Rollback: obj}
			},
			wantReason: RollbackOfRollback,
			wantOf:     "prod-bad-rb",
		},
		{
			name: "a second rollback object of one rollout",
			req: func() RollbackRequest {
				f := newRBFleet()
				first := rbOf(rbRollout("prod-bad-rb", rb, rbGood, fleetv1alpha1.RolloutRollingBack, 3*time.Hour), "prod-bad")
				obj := rbOf(rbRollout("my-rollback", rb, rbGood, "", 4*time.Hour), "prod-bad")
				return RollbackRequest{Asker: AskedByObject, FleetStage: f.fs, Rollouts: append(f.rollouts, obj, first), Rollback: obj}
			},
			wantReason:  RollbackAlreadyExists,
			wantMessage: `FleetRollout "prod-bad-rb" already rolls back "prod-bad": a rollout has one rollback`,
			wantOf:      "prod-bad",
		},
		{
			name: "the first of two rollback objects runs",
			req: func() RollbackRequest {
				f := newRBFleet()
				first := rbOf(rbRollout("prod-bad-rb", rb, rbGood, "", 3*time.Hour), "prod-bad")
				later := rbOf(rbRollout("my-rollback", rb, rbGood, "", 4*time.Hour), "prod-bad")
				return RollbackRequest{Asker: AskedByObject, FleetStage: f.fs, Rollouts: append(f.rollouts, later, first), Rollback: first}
			},
			wantOf:      "prod-bad",
			wantFreight: rbGood,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := PlanRollback(tt.req())
			if tt.wantOf == "" {
				require.Nil(t, got.Of)
			} else {
				require.NotNil(t, got.Of)
				require.Equal(t, tt.wantOf, got.Of.Name)
			}
			if tt.wantReason != "" {
				require.NotNil(t, got.Refused, "want %s", tt.wantReason)
				require.Equal(t, tt.wantReason, got.Refused.Reason, got.Refused.Error())
				require.False(t, got.Create())
				if tt.wantMessage != "" {
					require.Equal(t, tt.wantMessage, got.Refused.Message)
				}
				if tt.wantHint != "" {
					require.Equal(t, tt.wantHint, got.Refused.Hint)
					require.Equal(t, got.Refused.Message+"; "+tt.wantHint, got.Refused.Error(), "the hint follows the message")
				}
				return
			}
			require.Nil(t, got.Refused, "%v", got.Refused)
			require.Equal(t, tt.wantFreight, got.Freight.Name)
			if tt.wantExist != "" {
				require.False(t, got.Create())
				require.Equal(t, tt.wantExist, got.Existing.Name)
				return
			}
			require.True(t, got.Create())
			require.Nil(t, got.Existing)
			require.Equal(t, max(tt.wantAttempt, 1), got.Attempt)
			require.Equal(t, tt.wantAttempt > 1, got.Retries != nil, "a later attempt retries the one before")
		})
	}
}

func TestPlanRollback_defaultFreightKeepsItsOrigin(t *testing.T) {
	t.Parallel()
	f := newRBFleet()
	got := PlanRollback(f.request(AskedByPolicy, "prod-bad", ""))
	require.Equal(t, *f.fs.Status.LastGoodFreight, got.Freight)
	got.Freight.Origin.Name = "changed"
	require.Equal(t, "apps", f.fs.Status.LastGoodFreight.Origin.Name, "the plan holds a copy")
}

// TestPlanRollback_sameAnswerWhoeverAsks: for one request, every asker
// gets the same decision and the same message; only the hint differs.
func TestPlanRollback_sameAnswerWhoeverAsks(t *testing.T) {
	t.Parallel()
	heldBack := func() *rbFleet {
		return newRBFleet().with(rbBreached(rbRollout("prod-good-again", fleetv1alpha1.DirectionForward, rbGood,
			fleetv1alpha1.RolloutFailed, 90*time.Minute)))
	}
	noLastGood := func() *rbFleet {
		f := newRBFleet()
		f.fs.Status.LastGoodFreight = nil
		return f
	}
	for _, f := range []*rbFleet{heldBack(), noLastGood(), newRBFleet()} {
		var answers []RollbackPlan
		for _, asker := range []RollbackAsker{AskedByPolicy, AskedByStep, AskedByCLI} {
			answers = append(answers, PlanRollback(f.request(asker, "prod-bad", "")))
		}
		for _, a := range answers[1:] {
			require.Equal(t, answers[0].Create(), a.Create())
			require.Equal(t, answers[0].Freight, a.Freight)
			if answers[0].Refused != nil {
				require.Equal(t, answers[0].Refused.Reason, a.Refused.Reason)
				require.Equal(t, answers[0].Refused.Message, a.Refused.Message)
			}
		}
	}
}

func TestRollbackPlan_Waves(t *testing.T) {
	t.Parallel()
	of := &plan.WavePlan{Hash: "abc", Waves: []plan.PlannedWave{
		{Name: "pilot", Approval: fleetv1alpha1.ApprovalRequired, Members: []plan.Target{{ID: "p1"}, {ID: "p2"}}},
		{Name: "canary", Members: []plan.Target{{ID: "c1"}, {ID: "c2"}, {ID: "c3"}}},
		{Name: "general", Members: []plan.Target{{ID: "g1"}}},
	}}
	p := RollbackPlan{}
	got := p.Waves(of, map[string]bool{"p1": true, "p2": true, "c3": true, "c1": true, "g1": true, "elsewhere": true},
		map[string]bool{"g1": true})
	require.Equal(t, "abc", got.Hash)
	require.Equal(t, []plan.PlannedWave{
		{Name: "canary", Approval: fleetv1alpha1.ApprovalNone, Members: []plan.Target{{ID: "c1"}, {ID: "c3"}}},
		{Name: "pilot", Approval: fleetv1alpha1.ApprovalNone, Members: []plan.Target{{ID: "p1"}, {ID: "p2"}}},
	}, got.Waves, "reverse wave order, only moved targets no earlier attempt returned, in plan order; an empty wave is left out")
	require.Equal(t, fleetv1alpha1.ApprovalRequired, of.Waves[0].Approval, "the rolled-back plan is not changed")
	require.Empty(t, p.Waves(of, nil, nil).Waves)
}

// TestPlanRollback_doesWhatStatusAdvises: whenever the recovery plan that
// `kargo-fleet status` prints advises a rollback, the rollback that
// `kargo-fleet rollback` (and the step) asks for with no rollout named is
// of the same rollout and is created, not refused.
func TestPlanRollback_doesWhatStatusAdvises(t *testing.T) {
	t.Parallel()
	fleets := map[string]func() *rbFleet{
		"current rollout breached": newRBFleet,
		"stale current rollout name": func() *rbFleet {
			f := newRBFleet()
			f.fs.Status.CurrentRollout = "prod-deleted"
			return f
		},
		"stale current and last names": func() *rbFleet {
			f := newRBFleet()
			f.fs.Status.CurrentRollout, f.fs.Status.LastRollout = "prod-deleted", "prod-gone"
			return f
		},
		"no names": func() *rbFleet {
			f := newRBFleet()
			f.fs.Status.CurrentRollout, f.fs.Status.LastRollout = "", ""
			return f
		},
		"current rollout is its rollback": func() *rbFleet {
			f := newRBFleet().with(rbOf(rbRollout("prod-bad-rb", fleetv1alpha1.DirectionRollback, rbGood,
				fleetv1alpha1.RolloutFailed, 3*time.Hour), "prod-bad"))
			f.fs.Status.CurrentRollout = "prod-bad-rb"
			return f
		},
	}
	for name, fleet := range fleets {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := fleet()
			advice := PlanRecovery(f.fs, f.rollouts)
			for _, asker := range []RollbackAsker{AskedByCLI, AskedByStep} {
				got := PlanRollback(f.request(asker, "", ""))
				require.NotNil(t, advice.Of)
				require.NotNil(t, got.Of, "asker %v: %v", asker, got.Refused)
				require.Equal(t, advice.Of.Name, got.Of.Name, "asker %v rolls back another rollout than status names", asker)
				if advice.Action == RecoveryRollback {
					require.Nil(t, got.Refused, "status advises a rollback that asker %v refuses", asker)
					require.True(t, got.Create())
					require.Equal(t, advice.Freight, got.Freight.Name)
				}
			}
		})
	}
}
