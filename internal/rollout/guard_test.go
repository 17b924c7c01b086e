package rollout

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

func TestJudgeForeignPromotion(t *testing.T) {
	t.Parallel()
	auto := PromotionAdmission{FleetStage: "prod", Stage: "prod.c1", Freight: "f2", Role: StageTarget,
		User: "system:serviceaccount:kargo:kargo-controller"}
	person := auto
	person.User, person.Actor, person.GuardOff = "alice", "kubernetes:alice", true
	held := person
	held.HeldBackBy = "prod-x"
	for _, tc := range []struct {
		name string
		p    ForeignPromotion
		want GuardVerdict
	}{
		{name: "an operator promotes one target where the admission guard is off: allowed",
			p: ForeignPromotion{Admission: person, Phase: kargo.PromotionRunning}, want: GuardVerdict{}},
		{name: "auto-promotion is aborted",
			p: ForeignPromotion{Admission: auto, Phase: kargo.PromotionPending}, want: GuardVerdict{Refuse: true, Abort: true}},
		{name: "an operator's held-back Freight is aborted",
			p: ForeignPromotion{Admission: held, Phase: kargo.PromotionRunning}, want: GuardVerdict{Refuse: true, Abort: true}},
		{name: "an abort already asked for is not asked again",
			p:    ForeignPromotion{Admission: auto, Phase: kargo.PromotionRunning, AbortRequested: true},
			want: GuardVerdict{Refuse: true}},
		{name: "succeeded before the abort: undone",
			p:    ForeignPromotion{Admission: auto, Phase: kargo.PromotionSucceeded, Previous: "f1"},
			want: GuardVerdict{Refuse: true, Undo: "f1"}},
		{name: "succeeded, but a newer Promotion moved the target on since: nothing to undo",
			p:    ForeignPromotion{Admission: auto, Phase: kargo.PromotionSucceeded, Previous: "f1", MovedOn: true},
			want: GuardVerdict{Refuse: true}},
		{name: "succeeded, nothing to return to",
			p: ForeignPromotion{Admission: auto, Phase: kargo.PromotionSucceeded}, want: GuardVerdict{Refuse: true}},
		{name: "failed on its own: nothing to do",
			p:    ForeignPromotion{Admission: auto, Phase: kargo.PromotionFailed, Previous: "f1"},
			want: GuardVerdict{Refuse: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := JudgeForeignPromotion(tc.p)
			require.Equal(t, tc.want.Refuse, got.Refuse)
			require.Equal(t, tc.want.Abort, got.Abort)
			require.Equal(t, tc.want.Undo, got.Undo)
			if got.Refuse {
				require.Contains(t, got.Reason, "prod.c1")
			}
		})
	}
	v := JudgeForeignPromotion(ForeignPromotion{Admission: auto, Phase: kargo.PromotionPending})
	require.Contains(t, v.Reason, "Kargo's auto-promotion of Freight f2 into target Stage prod.c1 is refused: ")
}

func TestJudgeRefusedPromotion(t *testing.T) {
	t.Parallel()
	limits := Limits{ProgressDeadline: 10 * time.Minute}
	o := TargetObservation{RefusedSince: now.Add(-5 * time.Minute), RefusedMessage: "Freight is not available to this Stage"}
	require.Equal(t, TargetPending, Judge(o, limits, now).State, "refused for less than the deadline: tried again")
	o.RefusedSince = now.Add(-10 * time.Minute)
	j := Judge(o, limits, now)
	require.Equal(t, TargetFailed, j.State)
	require.Equal(t, ReasonPromotionRefused, j.Reason)
	require.Equal(t, "Kargo refused the Promotion for 10m0s: Freight is not available to this Stage", j.Message)
	require.Equal(t, TargetPending, Judge(o, Limits{}, now).State, "no deadline: never judged")
}

func TestJudgeTakenStageName(t *testing.T) {
	t.Parallel()
	limits := Limits{ProgressDeadline: 10 * time.Minute}
	o := TargetObservation{StageUnrecorded: true, StageName: "prod.eu-1"}
	require.Equal(t, Judgement{State: TargetPending}, Judge(o, limits, now), "not seen taken before: no deadline yet")
	o.TakenSince = now.Add(-4 * time.Minute)
	require.Equal(t, Judgement{State: TargetPending, DeadlineAt: now.Add(6 * time.Minute)}, Judge(o, limits, now),
		"taken for less than the deadline: looked at again when it passes")
	o.TakenSince = now.Add(-10 * time.Minute)
	j := Judge(o, limits, now)
	require.Equal(t, TargetFailed, j.State)
	require.Equal(t, ReasonStageNameTaken, j.Reason)
	require.Contains(t, j.Message, "prod.eu-1")
	require.Equal(t, TargetPending, Judge(o, Limits{}, now).State, "no deadline: never judged")
}
