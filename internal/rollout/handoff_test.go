package rollout

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// pilotPassed is an observation where the pilot wave passed at passedAt
// (recorded in the rollout's status) and canary was not requested yet.
func pilotPassed(passedAt time.Time, soak time.Duration, opts ...obsOption) Observation {
	p := fleet()
	p.Waves[0].Soak = soak
	at := metav1.NewTime(passedAt)
	o := observe(p, requested("pilot"), succeeded("pilot-00"))
	o.Rollout.Status.Waves = []fleetv1alpha1.WaveProgress{{Name: "pilot", Phase: fleetv1alpha1.WaveSucceeded, FinishedAt: &at}}
	o.RequestPhases = map[string]kargo.PromotionPhase{"pilot": kargo.PromotionSucceeded}
	o.WavePromoted = map[string]bool{}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

func TestHandOff(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name          string
		obs           Observation
		wantPromote   string
		wantRequeueAt time.Time
		wantWaiting   string
	}{
		{
			name:        "no soak: the next wave Stage is promoted at once",
			obs:         pilotPassed(now.Add(-time.Second), 0),
			wantPromote: "canary", wantWaiting: "kargo-fleet promotes the Freight into wave Stage prod-canary",
		},
		{
			name:          "soaking: look again when the soak ends",
			obs:           pilotPassed(now.Add(-10*time.Second), 30*time.Second),
			wantRequeueAt: now.Add(20 * time.Second),
			wantWaiting:   "soaking in wave pilot until 2026-11-22T10:00:20Z, then kargo-fleet promotes wave Stage prod-canary",
		},
		{
			name:        "the soak ended",
			obs:         pilotPassed(now.Add(-31*time.Second), 30*time.Second),
			wantPromote: "canary", wantWaiting: "kargo-fleet promotes the Freight into wave Stage prod-canary",
		},
		{
			name: "the previous wave Stage's Promotion has not finished: Kargo has not verified the Freight there",
			obs: pilotPassed(now.Add(-time.Second), 0, func(o *Observation) {
				o.RequestPhases["pilot"] = kargo.PromotionRunning
			}),
			wantWaiting: "waiting for the Promotion of wave Stage prod-pilot to finish",
		},
		{
			name: "the previous wave Stage's Promotion errored: the operator is told how to hand the Freight on",
			obs: pilotPassed(now.Add(-time.Second), 0, func(o *Observation) {
				o.RequestPhases["pilot"] = kargo.PromotionErrored
			}),
			wantWaiting: "the Promotion of wave Stage prod-pilot ended Errored although the wave passed: promote the Freight " +
				"into it again to hand it on: kargo promote --project shop --freight f2 --stage prod-pilot",
		},
		{
			name: "kargo-fleet's Promotion of the next wave Stage errored: the operator is told how to run the wave",
			obs: pilotPassed(now.Add(-time.Minute), 0, func(o *Observation) {
				o.WavePromoted["canary"] = true
				o.WaveGaveUp = map[string]kargo.PromotionPhase{"canary": kargo.PromotionErrored}
			}),
			wantWaiting: "the Promotion of the Freight into wave Stage prod-canary ended Errored: promote it again to run the wave: " +
				"kargo promote --project shop --freight f2 --stage prod-canary",
		},
		{
			name: "promoted once: never twice",
			obs: pilotPassed(now.Add(-time.Minute), 0, func(o *Observation) {
				o.WavePromoted["canary"] = true
			}),
			wantWaiting: "waiting for Kargo to run the Promotion of wave Stage prod-canary",
		},
		{
			name: "a wave promoted by hand waits for the operator",
			obs: pilotPassed(now.Add(-time.Minute), 0, func(o *Observation) {
				o.Plan.Waves[1].ManualPromotion = true
			}),
			wantWaiting: "waiting for the Freight to be promoted into wave Stage prod-canary (spec.waves[].promotion: Manual): " +
				"kargo promote --project shop --freight f2 --stage prod-canary",
		},
		{
			name: "paused: nothing is promoted",
			obs: pilotPassed(now.Add(-time.Minute), 0, func(o *Observation) {
				o.Rollout.Spec.Intent = fleetv1alpha1.IntentPause
			}),
			wantWaiting: "paused: wave Stage prod-canary is promoted when the rollout resumes",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := Decide(tc.obs)
			require.Equal(t, tc.wantPromote, d.PromoteWave)
			require.Equal(t, tc.wantRequeueAt, d.RequeueAt)
			require.Equal(t, tc.wantWaiting, d.Waves[1].Waiting)
			require.Empty(t, d.Start, "no target of the next wave starts before its wave Stage asks")
		})
	}
}

func TestHandOffNeverForTheFirstWaveOrRollbacks(t *testing.T) {
	t.Parallel()
	d := Decide(observe(fleet()))
	require.Empty(t, d.PromoteWave, "the first wave is promoted from outside the fleet")
	o := pilotPassed(now.Add(-time.Minute), 0)
	o.Rollout.Spec.Direction = fleetv1alpha1.DirectionRollback
	require.Empty(t, Decide(o).PromoteWave)
}
