package rollout

import (
	"strings"
	"testing"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/policy"
)

// blocked marks targets as kept off the Freight by a policy that holds or
// skips.
func blocked(hold bool, ids ...string) obsOption {
	return func(o *Observation) {
		for _, id := range ids {
			o.Targets[id] = TargetObservation{Blocked: &policy.Verdict{Blocks: []policy.Block{{Policy: "pci", Rule: "digest",
				Reason: "images pinned by digest", Hold: hold}}}}
		}
	}
}

func TestBlockedTargetsAreNeverStarted(t *testing.T) {
	for _, tc := range []struct {
		name       string
		hold       bool
		rollback   bool
		wantPassed bool
	}{
		{name: "a holding policy keeps the wave from passing", hold: true},
		{name: "a skipping policy lets the wave pass without them", wantPassed: true},
		{name: "a rollback never waits on a policy", hold: true, rollback: true, wantPassed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := []obsOption{requested("pilot", "canary"), succeeded("pilot-00", "canary-00", "canary-01"),
				blocked(tc.hold, "canary-02", "canary-03")}
			if tc.rollback {
				opts = append(opts, func(o *Observation) { o.Rollout.Spec.Direction = fleetv1alpha1.DirectionRollback })
			}
			d := Decide(observe(fleet(), opts...))
			for _, s := range d.Start {
				if s.Target.ID == "canary-02" || s.Target.ID == "canary-03" {
					t.Fatalf("started blocked target %s", s.Target.ID)
				}
			}
			canary := d.Waves[1]
			if canary.Blocked != 2 {
				t.Errorf("canary blocked = %d, want 2", canary.Blocked)
			}
			passed := canary.Phase == fleetv1alpha1.WaveSucceeded
			if passed != tc.wantPassed {
				t.Fatalf("canary phase %s, passed %v, want %v (%s)", canary.Phase, passed, tc.wantPassed, d.Message)
			}
			if !passed && (!strings.Contains(canary.Waiting, "2 target(s) blocked by FreightPolicy") ||
				!strings.Contains(canary.Waiting, "rule digest of FreightPolicy pci: images pinned by digest") ||
				!strings.Contains(d.Message, canary.Waiting)) {
				t.Errorf("waiting %q / message %q do not say which rule holds the wave", canary.Waiting, d.Message)
			}
			if !passed && !strings.Contains(d.Message, "wave canary: promoting 2 of 2 target(s)") {
				t.Errorf("message %q counts blocked targets as promoted", d.Message)
			}
		})
	}
}

func TestAPassedWaveStaysPassedWhenAPolicyBlocksLater(t *testing.T) {
	o := observe(fleet(), requested("pilot", "canary"), succeeded("pilot-00"), blocked(true, "canary-00"),
		succeeded("canary-01", "canary-02", "canary-03"))
	o.Rollout.Status.Waves = []fleetv1alpha1.WaveProgress{{Name: "pilot", Phase: fleetv1alpha1.WaveSucceeded},
		{Name: "canary", Phase: fleetv1alpha1.WaveSucceeded}}
	d := Decide(o)
	if d.Waves[1].Phase != fleetv1alpha1.WaveSucceeded {
		t.Errorf("canary went back to %s", d.Waves[1].Phase)
	}
}

func TestABlockedTargetWithAPromotionIsJudgedByIt(t *testing.T) {
	obs := TargetObservation{Promotion: &PromotionObservation{Name: "p", Phase: "Running", CreatedAt: now}, Blocked: &policy.Verdict{
		Blocks: []policy.Block{{Policy: "p", Rule: "r", Reason: "x", Hold: true}}}}
	if j := Judge(obs, Limits{}, now); j.State != TargetInFlight {
		t.Errorf("a target whose Promotion runs is %s, want InFlight: the policy stops new Promotions, not Kargo's", j.State)
	}
}
