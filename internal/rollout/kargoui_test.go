package rollout

import (
	"slices"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

func TestReadKargoUIGesture(t *testing.T) {
	t.Parallel()
	running := func(mut func(*RolloutAtHand)) *RolloutAtHand {
		ro := &RolloutAtHand{Name: "prod-1", Direction: fleetv1alpha1.DirectionForward, Phase: fleetv1alpha1.RolloutProgressing,
			Intent: fleetv1alpha1.IntentRun, Freight: "v2", Wave: "canary"}
		if mut != nil {
			mut(ro)
		}
		return ro
	}
	paused := running(func(ro *RolloutAtHand) { ro.Intent, ro.Phase = fleetv1alpha1.IntentPause, fleetv1alpha1.RolloutPaused })
	failed := running(func(ro *RolloutAtHand) { ro.Phase = fleetv1alpha1.RolloutFailed })
	rollback := running(func(ro *RolloutAtHand) { ro.Direction = fleetv1alpha1.DirectionRollback })
	cases := []struct {
		name string
		req  KargoUIRequest
		want KargoUIReading
	}{
		{"abort of the wave Promotion pauses", KargoUIRequest{Gesture: GestureAbortWavePromotion, Rollout: running(nil)},
			KargoUIReading{Action: ActionPause, Rollout: "prod-1"}},
		{"abort of the wave Promotion waiting for approval pauses", KargoUIRequest{Gesture: GestureAbortWavePromotion,
			Rollout: running(func(ro *RolloutAtHand) { ro.Phase = fleetv1alpha1.RolloutWaitingForApproval })},
			KargoUIReading{Action: ActionPause, Rollout: "prod-1"}},
		{"a paused rollout is not paused again", KargoUIRequest{Gesture: GestureAbortWavePromotion, Rollout: paused}, KargoUIReading{}},
		{"a final rollout is not paused", KargoUIRequest{Gesture: GestureAbortWavePromotion, Rollout: failed}, KargoUIReading{}},
		{"a rollback is never paused from the UI", KargoUIRequest{Gesture: GestureAbortWavePromotion, Rollout: rollback}, KargoUIReading{}},
		{"no rollout, no fleet action", KargoUIRequest{Gesture: GestureAbortWavePromotion}, KargoUIReading{}},
		{"abort of a target Promotion aborts", KargoUIRequest{Gesture: GestureAbortTargetPromotion, Rollout: running(nil)},
			KargoUIReading{Action: ActionAbort, Rollout: "prod-1"}},
		{"abort of a target Promotion of a paused rollout aborts", KargoUIRequest{Gesture: GestureAbortTargetPromotion, Rollout: paused},
			KargoUIReading{Action: ActionAbort, Rollout: "prod-1"}},
		{"abort of a rollback's target Promotion is Kargo's only", KargoUIRequest{Gesture: GestureAbortTargetPromotion, Rollout: rollback},
			KargoUIReading{}},
		{"promote of the paused Freight where it stopped resumes", KargoUIRequest{Gesture: GesturePromoteWaveStage, Rollout: paused,
			Freight: "v2", Wave: "canary"}, KargoUIReading{Action: ActionResume, Rollout: "prod-1"}},
		{"promote into another wave Stage does not resume", KargoUIRequest{Gesture: GesturePromoteWaveStage, Rollout: paused,
			Freight: "v2", Wave: "general"}, KargoUIReading{}},
		{"promote of a running rollout's Freight is Kargo's only", KargoUIRequest{Gesture: GesturePromoteWaveStage, Rollout: running(nil),
			Freight: "v2", Wave: "canary"}, KargoUIReading{}},
		{"promote of the rollback Freight into the first wave rolls back", KargoUIRequest{Gesture: GesturePromoteWaveStage,
			Rollout: failed, Freight: "v1", Wave: "pilot", FirstWave: true, RollbackFreight: "v1"},
			KargoUIReading{Action: ActionRollback, Rollout: "prod-1"}},
		{"promote of the rollback Freight into a later wave is Kargo's only", KargoUIRequest{Gesture: GesturePromoteWaveStage,
			Rollout: failed, Freight: "v1", Wave: "canary", RollbackFreight: "v1"}, KargoUIReading{}},
		{"promote of other earlier Freight starts a rollout as before", KargoUIRequest{Gesture: GesturePromoteWaveStage,
			Rollout: failed, Freight: "v0", Wave: "pilot", FirstWave: true, RollbackFreight: "v1"}, KargoUIReading{}},
		{"nothing to roll back", KargoUIRequest{Gesture: GesturePromoteWaveStage, Rollout: failed, Freight: "v1", Wave: "pilot",
			FirstWave: true}, KargoUIReading{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := ReadKargoUIGesture(tc.req); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestKargoUIReadingRights(t *testing.T) {
	t.Parallel()
	fs := &fleetv1alpha1.FleetStage{}
	fs.Name, fs.Spec.Waves = "prod", []fleetv1alpha1.Wave{{Name: "pilot"}, {Name: "general"}}
	if got := (KargoUIReading{}).Rights("shop", fs); got != nil {
		t.Errorf("no action needs no right, got %v", got)
	}
	pause := KargoUIReading{Action: ActionPause, Rollout: "prod-1"}.Rights("shop", fs)
	want := []string{"patch fleetrollouts prod-1", "promote stages prod-pilot", "promote stages prod-general"}
	if got := rightStrings(pause); !slices.Equal(got, want) {
		t.Errorf("pause needs %v, want %v", got, want)
	}
	rollback := KargoUIReading{Action: ActionRollback, Rollout: "prod-1"}.Rights("shop", fs)
	if got := rightStrings(rollback)[0]; got != "create fleetrollouts " {
		t.Errorf("rollback needs %q first, want create on fleetrollouts", got)
	}
	for _, r := range append(pause, rollback...) {
		if r.Namespace != "shop" {
			t.Errorf("right %+v outside the Project", r)
		}
	}
}

func TestFleetActionVerb(t *testing.T) {
	t.Parallel()
	for a, want := range map[FleetAction]string{ActionPause: "pause", ActionResume: "resume", ActionAbort: "abort", ActionRollback: "roll back"} {
		if got := a.Verb(); got != want {
			t.Errorf("%s.Verb() = %q, want %q", a, got, want)
		}
	}
}

func rightStrings(rights []authorizationv1.ResourceAttributes) []string {
	var out []string
	for _, r := range rights {
		out = append(out, r.Verb+" "+r.Resource+" "+r.Name)
	}
	return out
}

func TestStandingWave(t *testing.T) {
	t.Parallel()
	ro := &fleetv1alpha1.FleetRollout{}
	if got := StandingWave(ro); got != "" {
		t.Errorf("no waves: %q", got)
	}
	ro.Status.Waves = []fleetv1alpha1.WaveProgress{
		{Name: "pilot", Phase: fleetv1alpha1.WaveSucceeded}, {Name: "skip", Phase: fleetv1alpha1.WaveSkipped},
		{Name: "canary", Phase: fleetv1alpha1.WavePending}, {Name: "general", Phase: fleetv1alpha1.WavePending},
	}
	if got := StandingWave(ro); got != "canary" {
		t.Errorf("got %q, want the first wave that has not passed", got)
	}
	for i := range ro.Status.Waves {
		ro.Status.Waves[i].Phase = fleetv1alpha1.WaveSucceeded
	}
	if got := StandingWave(ro); got != "general" {
		t.Errorf("got %q, want the last wave once all passed", got)
	}
}

func TestAbortGestures(t *testing.T) {
	t.Parallel()
	ro := &fleetv1alpha1.FleetRollout{}
	ro.Name, ro.Spec.Direction, ro.Spec.Freight.Name = "prod-1", fleetv1alpha1.DirectionForward, "v2"
	ro.Status.Phase = fleetv1alpha1.RolloutProgressing
	aborted := []AbortedPromotion{
		{Gesture: GestureAbortTargetPromotion, Promotion: "t1", Actor: "email:alice@example.com"},
		{Gesture: GestureAbortTargetPromotion, Promotion: "t2", Actor: "kubernetes:system:serviceaccount:kargo-fleet:kargo-fleet"},
		{Gesture: GestureAbortWavePromotion, Promotion: "w", Actor: "email:bob@example.com"},
	}
	got := AbortGestures(ro, aborted, "kubernetes:system:serviceaccount:kargo-fleet:kargo-fleet")
	if len(got) != 2 || got[0].Promotion != "w" || got[0].Reading.Action != ActionPause ||
		got[1].Promotion != "t1" || got[1].Reading.Action != ActionAbort {
		t.Fatalf("got %+v, want the wave Promotion's pause first, then t1's abort, and none of kargo-fleet's own", got)
	}
	ro.Spec.Intent = fleetv1alpha1.IntentPause
	got = AbortGestures(ro, aborted, "kubernetes:system:serviceaccount:kargo-fleet:kargo-fleet")
	if len(got) != 1 || got[0].Reading.Action != ActionAbort {
		t.Fatalf("paused: got %+v, want only the abort", got)
	}
	ro.Status.Phase = fleetv1alpha1.RolloutAborted
	if got := AbortGestures(ro, aborted, ""); len(got) != 0 {
		t.Errorf("final rollout: got %+v", got)
	}
}

func TestGestureRequest(t *testing.T) {
	t.Parallel()
	fs := &fleetv1alpha1.FleetStage{}
	fs.Name = "prod"
	fs.Spec.Waves = []fleetv1alpha1.Wave{{Name: "pilot"}, {Name: "rest"}}
	fs.Status.LastGoodFreight = &fleetv1alpha1.FreightReference{Name: "v1"}
	paused := &fleetv1alpha1.FleetRollout{}
	paused.Name, paused.Spec.FleetStage, paused.Spec.Direction = "prod-2", "prod", fleetv1alpha1.DirectionForward
	paused.Spec.Freight.Name, paused.Spec.Intent = "v2", fleetv1alpha1.IntentPause
	paused.Status.Phase = fleetv1alpha1.RolloutPaused
	paused.Status.Waves = []fleetv1alpha1.WaveProgress{{Name: "pilot", Phase: fleetv1alpha1.WaveSucceeded}, {Name: "rest"}}
	promotion := func(stage, freight string, labels map[string]string) *kargo.Promotion {
		return kargo.NewPromotion("shop", stage, freight, labels, nil)
	}
	req, ok := GestureRequest(fs, []*fleetv1alpha1.FleetRollout{paused}, StageWave, GesturePromoteWaveStage, promotion("prod-rest", "v2", nil))
	if !ok || ReadKargoUIGesture(req).Action != ActionResume {
		t.Errorf("Promote of the paused Freight into its wave Stage: %+v, %v", req, ok)
	}
	for _, recorded := range []map[string]string{
		{fleetv1alpha1.StepKeyAnnotation: "prod-pilot.01.v2/wave::start"},
		{fleetv1alpha1.WaveRequestAnnotationPrefix + "rest": "prod-rest.01.v2"},
	} {
		again := paused.DeepCopy()
		again.Annotations = recorded
		p := promotion("prod-rest", "v2", nil)
		p.Name = "prod-rest.01.v2"
		if recorded[fleetv1alpha1.StepKeyAnnotation] != "" {
			p.Name = "prod-pilot.01.v2"
		}
		if _, ok := GestureRequest(fs, []*fleetv1alpha1.FleetRollout{again}, StageWave, GesturePromoteWaveStage, p); ok {
			t.Errorf("a Promotion the rollout records (%v) read as a new gesture", recorded)
		}
	}
	own := map[string]string{fleetv1alpha1.WavePromotionLabel: "prod-2"}
	if _, ok := GestureRequest(fs, []*fleetv1alpha1.FleetRollout{paused}, StageWave, GesturePromoteWaveStage, promotion("prod-rest", "v2", own)); ok {
		t.Error("kargo-fleet's own wave Promotion read as a gesture")
	}
	if _, ok := GestureRequest(fs, nil, StageTarget, GesturePromoteWaveStage, promotion("prod.a", "v2", nil)); ok {
		t.Error("a target Promotion read as a Promote gesture")
	}
	target := promotion("prod.a", "v2", map[string]string{fleetv1alpha1.RolloutLabel: "prod-2"})
	req, ok = GestureRequest(fs, []*fleetv1alpha1.FleetRollout{paused}, StageTarget, GestureAbortWavePromotion, target)
	if !ok || req.Gesture != GestureAbortTargetPromotion || req.Rollout == nil || req.Rollout.Name != "prod-2" {
		t.Errorf("Abort of a target Promotion: %+v, %v", req, ok)
	}
}

func TestRollbackStartedBy(t *testing.T) {
	ro := func(name string, dir fleetv1alpha1.RolloutDirection, key string) *fleetv1alpha1.FleetRollout {
		r := &fleetv1alpha1.FleetRollout{}
		r.Name, r.Spec.Direction = name, dir
		r.Annotations = map[string]string{fleetv1alpha1.StepKeyAnnotation: key}
		return r
	}
	rollouts := []*fleetv1alpha1.FleetRollout{
		ro("fwd", fleetv1alpha1.DirectionForward, "prod-pilot.01.v1/wave::start"),
		ro("fwd-rb", fleetv1alpha1.DirectionRollback, "prod-pilot.02.v1/wave::start"),
	}
	if got := RollbackStartedBy(rollouts, "prod-pilot.02.v1"); got == nil || got.Name != "fwd-rb" {
		t.Errorf("RollbackStartedBy = %v, want fwd-rb", got)
	}
	if got := RollbackStartedBy(rollouts, "prod-pilot.01.v1"); got != nil {
		t.Errorf("a forward rollout's Promotion read as a rollback's: %v", got.Name)
	}
}
