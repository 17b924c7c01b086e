package rollout

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"strings"
	"testing"

	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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

// TestAnUnverifiedImageHoldsTheWaveUnderSkip: a target blocked only because
// its image's signature could not be verified yet (its registry down)
// holds the wave although its policy says Skip: the outage says nothing
// about the Freight, and skipping would leave the target behind for good.
func TestAnUnverifiedImageHoldsTheWaveUnderSkip(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	pem, err := cryptoutils.MarshalPublicKeyToPEM(&key.PublicKey)
	require.NoError(t, err)
	compiled, errs := policy.Compile(&fleetv1alpha1.FreightPolicy{ObjectMeta: metav1.ObjectMeta{Name: "signed"},
		Spec: fleetv1alpha1.FreightPolicySpec{BlockedTargets: fleetv1alpha1.BlockedTargetsSkip, Rules: []fleetv1alpha1.FreightRule{
			{Name: "ci", Signatures: &fleetv1alpha1.SignatureRequirement{PublicKey: string(pem)}}}}})
	require.Empty(t, errs)
	req := policy.Requirements([]*policy.Compiled{compiled})[0]
	img := policy.Image{RepoURL: "registry.corp/shop", Digest: "sha256:abc"}
	freight := policy.Freight{Name: "f", Images: []policy.Image{img}}
	verdictFor := func(r policy.SignatureResult) *policy.Verdict {
		sigs := policy.Signatures{}
		sigs.Set(&img, &req, r)
		var k policy.Checker
		v := k.Check([]*policy.Compiled{compiled}, &freight, sigs, &policy.Target{ID: "t"})
		return &v
	}
	for _, tc := range []struct {
		name       string
		result     policy.SignatureResult
		wantPassed bool
	}{
		{name: "failed: skipped", result: policy.SignatureResult{Outcome: policy.Failed, Reason: "no signature"}, wantPassed: true},
		{name: "inconclusive: held", result: policy.SignatureResult{Outcome: policy.Inconclusive, Reason: "registry unreachable"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := verdictFor(tc.result)
			d := Decide(observe(fleet(), requested("pilot", "canary"), succeeded("pilot-00", "canary-00", "canary-01", "canary-02"),
				func(o *Observation) { o.Targets["canary-03"] = TargetObservation{Blocked: v} }))
			canary := d.Waves[1]
			require.EqualValues(t, 1, canary.Blocked)
			require.Equal(t, tc.wantPassed, canary.Phase == fleetv1alpha1.WaveSucceeded, d.Message)
			if !tc.wantPassed {
				require.Contains(t, canary.Waiting, "could not verify registry.corp/shop@sha256:abc: registry unreachable")
			}
		})
	}
}
