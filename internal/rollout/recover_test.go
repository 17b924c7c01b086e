package rollout

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetrollout"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// obsErroredRequest is the user's Promotion of the pilot wave Stage, made
// before the rollout (its step created it), that asked for the wave and
// then ended Errored: its step met its error threshold while waiting.
var obsErroredRequest = strings.NewReplacer("09:58:05Z", "09:57:59Z", "phase: Running",
	"phase: Errored\n  finishedAt: \"2026-11-22T09:59:30Z\"\n  message: 'step \"wave::wait\" met error threshold of 12: connection refused'").
	Replace(obsWavePromotion)

const obsErroredName = "prod-pilot.01jdx3k0a1b2c3d4e5f6g7h8j9.9f8e7d6"

func requestedBy(name string) func(*Snapshot) {
	return func(s *Snapshot) {
		s.Rollout.Annotations = map[string]string{fleetrollout.WaveRequestAnnotation("pilot"): name}
	}
}

// recovery returns a copy of the wave Promotion doc renamed, created at
// created, recovering errored, in phase.
func recovery(name, created, errored, phase string) string {
	return strings.NewReplacer(obsErroredName, name, `creationTimestamp: "2026-11-22T09:58:05Z"`, `creationTimestamp: "`+created+`"`,
		`labels: {kargo.akuity.io/stage: prod-pilot}`, `labels: {kargo.akuity.io/stage: prod-pilot, `+fleetv1alpha1.WavePromotionLabel+`: `+obsRollout+`}`,
		`annotations: {kargo.akuity.io/create-actor: "kubernetes:alice"}`, `annotations: {`+fleetv1alpha1.RecoversAnnotation+`: `+errored+`}`,
		"phase: Running", "phase: "+phase).Replace(obsWavePromotion)
}

func TestObserveErroredWavePromotions(t *testing.T) {
	t.Parallel()
	const second = "prod-pilot.01jdx4a0a1b2c3d4e5f6g7h8j9.9f8e7d6"
	for _, tc := range []struct {
		name   string
		docs   []string
		mutate func(*Snapshot)
		want   map[string]ErroredWavePromotion
	}{
		{
			name:   "the Promotion that asked for the wave errored, though made before the rollout",
			docs:   []string{obsErroredRequest},
			mutate: requestedBy(obsErroredName),
			want: map[string]ErroredWavePromotion{"pilot": {Name: obsErroredName,
				Message:    `step "wave::wait" met error threshold of 12: connection refused`,
				FinishedAt: time.Date(2026, 11, 22, 9, 59, 30, 0, time.UTC)}},
		},
		{
			name: "an errored Promotion from before the rollout that asked for nothing is not the rollout's",
			docs: []string{obsErroredRequest},
			want: map[string]ErroredWavePromotion{},
		},
		{
			name:   "a recovery running: nothing to recover",
			docs:   []string{obsErroredRequest, recovery(second, "2026-11-22T09:59:45Z", obsErroredName, "Running")},
			mutate: requestedBy(obsErroredName),
			want:   map[string]ErroredWavePromotion{},
		},
		{
			name:   "the recovery errored too: it is recovered in turn, and the count paces the next",
			docs:   []string{obsErroredRequest, recovery(second, "2026-11-22T09:59:45Z", obsErroredName, "Errored")},
			mutate: requestedBy(obsErroredName),
			want: map[string]ErroredWavePromotion{"pilot": {Name: second, Recoveries: 1,
				FinishedAt: time.Date(2026, 11, 22, 9, 59, 45, 0, time.UTC)}},
		},
		{
			name:   "Failed and Aborted are decisions, not errors",
			docs:   []string{strings.Replace(obsErroredRequest, "phase: Errored", "phase: Failed", 1)},
			mutate: requestedBy(obsErroredName),
			want:   map[string]ErroredWavePromotion{},
		},
		{
			name: "a recovery created a moment ago and not listed yet keeps the wave alive",
			docs: []string{obsErroredRequest},
			mutate: func(s *Snapshot) {
				requestedBy(obsErroredName)(s)
				s.Expected = map[string]bool{WaveRecoveryKey("pilot", obsErroredName): true}
			},
			want: map[string]ErroredWavePromotion{},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := obsSnapshot(t, tc.docs...)
			if tc.mutate != nil {
				tc.mutate(&s)
			}
			o, err := Observe(s, now)
			require.NoError(t, err)
			require.Equal(t, tc.want, o.WaveErrored)
		})
	}
}

func TestObserveSeesTheRecoveryItExpected(t *testing.T) {
	t.Parallel()
	s := obsSnapshot(t, obsErroredRequest, recovery("prod-pilot.01jdx4a0a1b2c3d4e5f6g7h8j9.9f8e7d6", "2026-11-22T09:59:45Z", obsErroredName, ""))
	requestedBy(obsErroredName)(&s)
	key := WaveRecoveryKey("pilot", obsErroredName)
	s.Expected = map[string]bool{key: true}
	o, err := Observe(s, now)
	require.NoError(t, err)
	require.Equal(t, []string{key}, o.Seen)
	require.Empty(t, o.Expected)
}

func TestDecideRecoversAnErroredWavePromotion(t *testing.T) {
	t.Parallel()
	errored := ErroredWavePromotion{Name: "prod-canary.x.f2", Message: "met error threshold", FinishedAt: now.Add(-15 * time.Second)}
	running := func(mut ...func(*Observation)) Observation {
		o := observe(fleet(), requested("pilot", "canary"), succeeded("pilot-00"))
		o.WaveErrored = map[string]ErroredWavePromotion{"canary": errored}
		for _, m := range mut {
			m(&o)
		}
		return o
	}
	for _, tc := range []struct {
		name          string
		obs           Observation
		want          *WaveRecovery
		wantRequeueAt time.Time
	}{
		{name: "due: promoted again", obs: running(), want: &WaveRecovery{Wave: "canary", Errored: errored}},
		{
			name: "the second recovery waits twice as long",
			obs: running(func(o *Observation) {
				e := errored
				e.Recoveries = 1
				o.WaveErrored["canary"] = e
			}),
			wantRequeueAt: now.Add(5 * time.Second),
		},
		{
			name: "paused: the wave Stage is still recovered (pausing holds targets, not the wave's Promotion)",
			obs:  running(func(o *Observation) { o.Rollout.Spec.Intent = fleetv1alpha1.IntentPause }),
			want: &WaveRecovery{Wave: "canary", Errored: errored},
		},
		{name: "aborted: never", obs: running(aborted)},
		{name: "a rollback: never", obs: running(func(o *Observation) { o.Rollout.Spec.Direction = fleetv1alpha1.DirectionRollback })},
		{name: "a finished rollout: never", obs: running(func(o *Observation) { o.Rollout.Status.Phase = fleetv1alpha1.RolloutFailed })},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := Decide(tc.obs)
			require.Equal(t, tc.want, d.RecoverWave)
			if !tc.wantRequeueAt.IsZero() {
				require.Equal(t, tc.wantRequeueAt, d.RequeueAt)
			}
		})
	}
}

func TestHandOffAfterAnErroredWavePromotion(t *testing.T) {
	t.Parallel()
	o := pilotPassed(now.Add(-time.Second), 0, func(o *Observation) {
		o.RequestPhases["pilot"] = kargo.PromotionErrored
		o.WaveErrored = map[string]ErroredWavePromotion{"pilot": {Name: "prod-pilot.x.f2", Message: "met error threshold",
			FinishedAt: now.Add(-time.Second)}}
	})
	d := Decide(o)
	require.Empty(t, d.PromoteWave, "the next wave waits until Kargo verified the Freight in the previous wave Stage")
	require.Nil(t, d.RecoverWave, "not due yet")
	require.Equal(t, now.Add(9*time.Second), d.RequeueAt)
	require.Equal(t, "Promotion prod-pilot.x.f2 of wave Stage prod-pilot ended Errored (met error threshold); kargo-fleet "+
		"promotes the Freight into it again at 2026-11-22T10:00:09Z, to hand it on", d.Waves[1].Waiting)
}

func TestRecoveryDelay(t *testing.T) {
	t.Parallel()
	for n, want := range []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second,
		160 * time.Second, 320 * time.Second, 10 * time.Minute, 10 * time.Minute} {
		require.Equal(t, want, recoveryDelay(n), "after %d recoveries", n)
	}
	require.Equal(t, 10*time.Minute, recoveryDelay(1<<30), "bounded however many")
}

func TestWaveRecoveryKey(t *testing.T) {
	t.Parallel()
	wave, errored, ok := ParseWaveRecoveryKey(WaveRecoveryKey("canary", "prod-canary.01j.abc"))
	require.True(t, ok)
	require.Equal(t, "canary", wave)
	require.Equal(t, "prod-canary.01j.abc", errored)
	for _, k := range []string{WaveKey("canary"), "eu-1", WaveRecoveryKeyPrefix + "canary", WaveRecoveryKeyPrefix + "/x"} {
		_, _, ok := ParseWaveRecoveryKey(k)
		require.False(t, ok, k)
	}
}
