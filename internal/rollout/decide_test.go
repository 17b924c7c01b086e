package rollout

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
)

var now = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// fleet is a three-wave plan: pilot (1 target), canary (4, maxFailures 1),
// general (10); every wave promotes 2 targets at once.
func fleet() *plan.WavePlan {
	wave := func(name string, n, maxFailures int, approval fleetv1alpha1.ApprovalPolicy) plan.PlannedWave {
		w := plan.PlannedWave{Name: name, MaxConcurrent: 2, MaxFailures: maxFailures, ProgressDeadline: 10 * time.Minute, Approval: approval}
		for i := range n {
			id := fmt.Sprintf("%s-%02d", name, i)
			w.Members = append(w.Members, plan.Target{ID: id, Name: id, Labels: map[string]string{"region": fmt.Sprint(i % 2)}})
		}
		return w
	}
	return &plan.WavePlan{Waves: []plan.PlannedWave{
		wave("pilot", 1, 0, ""), wave("canary", 4, 1, ""), wave("general", 10, 0, fleetv1alpha1.ApprovalRequired),
	}}
}

type obsOption func(*Observation)

func observe(p *plan.WavePlan, opts ...obsOption) Observation {
	o := Observation{
		Now:            now,
		FleetStage:     "prod",
		Rollout:        &fleetv1alpha1.FleetRollout{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "r1"}, Spec: fleetv1alpha1.FleetRolloutSpec{FleetStage: "prod", Freight: fleetv1alpha1.FreightReference{Name: "f2"}, Direction: fleetv1alpha1.DirectionForward}},
		Plan:           p,
		Index:          plan.NewScheduleIndex(p, nil),
		RequestedWaves: map[string]bool{},
		ApprovedWaves:  map[string]bool{},
		Targets:        map[string]TargetObservation{},
		Expected:       map[string]bool{},
	}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

func requested(waves ...string) obsOption {
	return func(o *Observation) {
		for _, w := range waves {
			o.RequestedWaves[w] = true
		}
	}
}

func target(id string, phase kargo.PromotionPhase, mut ...func(*TargetObservation)) obsOption {
	return func(o *Observation) {
		t := TargetObservation{
			Promotion: &PromotionObservation{Name: "p-" + id, Phase: phase, CreatedAt: now.Add(-time.Minute)},
			Health:    kargo.HealthHealthy,
			OnFreight: phase == kargo.PromotionSucceeded,
		}
		for _, m := range mut {
			m(&t)
		}
		o.Targets[id] = t
	}
}

func succeeded(ids ...string) obsOption {
	return func(o *Observation) {
		for _, id := range ids {
			target(id, kargo.PromotionSucceeded)(o)
		}
	}
}

func startIDs(d Decision) []string {
	var ids []string
	for _, s := range d.Start {
		ids = append(ids, s.Target.ID)
	}
	return ids
}

func TestDecide(t *testing.T) {
	t.Parallel()
	canaryDone := []string{"canary-00", "canary-01", "canary-02", "canary-03"}
	tests := []struct {
		name       string
		obs        Observation
		wantPhase  fleetv1alpha1.RolloutPhase
		wantStart  []string
		wantAbort  []string
		wantWaves  []fleetv1alpha1.WavePhase
		assertions func(*testing.T, Decision)
	}{
		{
			name:      "no wave requested yet",
			obs:       observe(fleet()),
			wantPhase: fleetv1alpha1.RolloutPending,
			wantWaves: []fleetv1alpha1.WavePhase{fleetv1alpha1.WavePending, fleetv1alpha1.WavePending, fleetv1alpha1.WavePending},
		},
		{
			name:      "first wave requested starts its target",
			obs:       observe(fleet(), requested("pilot")),
			wantPhase: fleetv1alpha1.RolloutProgressing,
			wantStart: []string{"pilot-00"},
			wantWaves: []fleetv1alpha1.WavePhase{fleetv1alpha1.WaveProgressing, fleetv1alpha1.WavePending, fleetv1alpha1.WavePending},
		},
		{
			name:      "a wave starts at most maxConcurrent targets",
			obs:       observe(fleet(), requested("pilot", "canary"), succeeded("pilot-00")),
			wantPhase: fleetv1alpha1.RolloutProgressing,
			wantStart: []string{"canary-00", "canary-01"},
		},
		{
			name: "a target expected in the cache is never started twice",
			obs: observe(fleet(), requested("pilot", "canary"), succeeded("pilot-00"),
				func(o *Observation) { o.Expected["canary-00"] = true }),
			wantPhase: fleetv1alpha1.RolloutProgressing,
			wantStart: []string{"canary-01"},
		},
		{
			name:      "the next wave waits for its wave Stage Promotion",
			obs:       observe(fleet(), requested("pilot"), succeeded("pilot-00")),
			wantPhase: fleetv1alpha1.RolloutProgressing,
			wantWaves: []fleetv1alpha1.WavePhase{fleetv1alpha1.WaveSucceeded, fleetv1alpha1.WavePending, fleetv1alpha1.WavePending},
		},
		{
			name:      "a failure within maxFailures continues",
			obs:       observe(fleet(), requested("pilot", "canary"), succeeded("pilot-00", "canary-00"), target("canary-01", kargo.PromotionFailed)),
			wantPhase: fleetv1alpha1.RolloutProgressing,
			wantStart: []string{"canary-02", "canary-03"},
		},
		{
			name: "crossing maxFailures halts: nothing new starts, in-flight finish",
			obs: observe(fleet(), requested("pilot", "canary"), succeeded("pilot-00"),
				target("canary-00", kargo.PromotionFailed), target("canary-01", kargo.PromotionErrored), target("canary-02", kargo.PromotionRunning)),
			wantPhase: fleetv1alpha1.RolloutHalted,
			wantWaves: []fleetv1alpha1.WavePhase{fleetv1alpha1.WaveSucceeded, fleetv1alpha1.WaveHalted, fleetv1alpha1.WavePending},
			assertions: func(t *testing.T, d Decision) {
				require.Equal(t, plan.HaltWaveThreshold, d.Breach.Reason)
				require.Len(t, d.Failures, 2)
				require.Nil(t, d.Waves[1].FinishedAt, "a halted wave with Promotions in flight has not finished")
			},
		},
		{
			name: "a halted rollout with nothing in flight fails with its breach",
			obs: observe(fleet(), requested("pilot", "canary"), succeeded("pilot-00", "canary-03"),
				target("canary-00", kargo.PromotionFailed), target("canary-01", kargo.PromotionFailed)),
			wantPhase: fleetv1alpha1.RolloutFailed,
			wantWaves: []fleetv1alpha1.WavePhase{fleetv1alpha1.WaveSucceeded, fleetv1alpha1.WaveFailed, fleetv1alpha1.WavePending},
			assertions: func(t *testing.T, d Decision) {
				require.Equal(t, plan.HaltWaveThreshold, d.Breach.Reason)
				require.NotNil(t, d.Waves[1].FinishedAt, "the failed wave records when it finished")
				require.Equal(t, now, d.Waves[1].FinishedAt.Time)
			},
		},
		{
			name: "onHalt Abort aborts the in-flight Promotions",
			obs: observe(fleet(), requested("pilot", "canary"), succeeded("pilot-00"),
				target("canary-00", kargo.PromotionFailed), target("canary-01", kargo.PromotionFailed), target("canary-02", kargo.PromotionRunning),
				func(o *Observation) { o.OnHalt = fleetv1alpha1.InFlightAbort }),
			wantPhase: fleetv1alpha1.RolloutHalted,
			wantAbort: []string{"p-canary-02"},
		},
		{
			name: "a breach recorded in status stays a breach",
			obs: observe(fleet(), requested("pilot", "canary"), succeeded("pilot-00"), func(o *Observation) {
				o.Rollout.Status.Phase = fleetv1alpha1.RolloutHalted
				o.Rollout.Status.Conditions = []metav1.Condition{{Type: fleetv1alpha1.ThresholdBreachedCondition,
					Status: metav1.ConditionTrue, Reason: string(plan.HaltWaveThreshold), Message: "wave canary: 2 of 4 failed"}}
			}),
			wantPhase: fleetv1alpha1.RolloutFailed,
		},
		{
			name: "a recorded breach counts the targets that failed after it",
			obs: observe(fleet(), requested("pilot", "canary"), succeeded("pilot-00"),
				target("canary-00", kargo.PromotionFailed), target("canary-01", kargo.PromotionFailed),
				target("canary-02", kargo.PromotionFailed), target("canary-03", kargo.PromotionRunning), func(o *Observation) {
					o.Rollout.Status.Phase = fleetv1alpha1.RolloutHalted
					o.Rollout.Status.Conditions = []metav1.Condition{{Type: fleetv1alpha1.ThresholdBreachedCondition,
						Status: metav1.ConditionTrue, Reason: string(plan.HaltWaveThreshold),
						Message: "wave canary: 2 of 4 targets failed, more than the 1 allowed by maxFailures"}}
				}),
			wantPhase: fleetv1alpha1.RolloutHalted,
			assertions: func(t *testing.T, d Decision) {
				require.EqualValues(t, 3, d.Waves[1].Failed)
				require.Equal(t, "wave canary: 3 of 4 targets failed, more than the 1 allowed by maxFailures", d.Breach.Message)
				require.Equal(t, "halted: wave canary: 3 of 4 targets failed, more than the 1 allowed by maxFailures; "+
					"1 target Promotion(s) in flight finish, no new one starts", d.Message)
			},
		},
		{
			name:      "an approval gate waits for kargo approve and says so",
			obs:       observe(fleet(), requested("pilot", "canary", "general"), succeeded("pilot-00"), succeeded(canaryDone...)),
			wantPhase: fleetv1alpha1.RolloutWaitingForApproval,
			assertions: func(t *testing.T, d Decision) {
				require.Contains(t, d.Message, "kargo approve --project shop --freight f2 --stage prod-general")
				require.Equal(t, fleetv1alpha1.WaveWaitingForApproval, d.Waves[2].Phase)
			},
		},
		{
			name: "an approval releases the gate",
			obs: observe(fleet(), requested("pilot", "canary", "general"), succeeded("pilot-00"), succeeded(canaryDone...),
				func(o *Observation) { o.ApprovedWaves["general"] = true }),
			wantPhase: fleetv1alpha1.RolloutProgressing,
			wantStart: []string{"general-00", "general-01"},
		},
		{
			name: "pause starts nothing",
			obs: observe(fleet(), requested("pilot", "canary"), succeeded("pilot-00"),
				func(o *Observation) { o.Rollout.Spec.Intent = fleetv1alpha1.IntentPause }),
			wantPhase: fleetv1alpha1.RolloutPaused,
		},
		{
			name: "abort aborts every in-flight Promotion",
			obs: observe(fleet(), requested("pilot", "canary"), succeeded("pilot-00"),
				target("canary-00", kargo.PromotionRunning), target("canary-01", kargo.PromotionPending),
				func(o *Observation) { o.Rollout.Spec.Intent = fleetv1alpha1.IntentAbort }),
			wantPhase: fleetv1alpha1.RolloutAborted,
			wantAbort: []string{"p-canary-00", "p-canary-01"},
		},
		{
			name: "a target past its progress deadline fails and is aborted",
			obs: observe(fleet(), requested("pilot"), target("pilot-00", kargo.PromotionRunning, func(t *TargetObservation) {
				t.Promotion.CreatedAt = now.Add(-11 * time.Minute)
			})),
			wantPhase: fleetv1alpha1.RolloutFailed,
			wantAbort: []string{"p-pilot-00"},
			assertions: func(t *testing.T, d Decision) {
				require.Equal(t, ReasonProgressDeadlineExceeded, d.Failures[0].Reason)
			},
		},
		{
			name: "a busy target Stage is not started",
			obs: observe(fleet(), requested("pilot"), func(o *Observation) {
				o.Targets["pilot-00"] = TargetObservation{StageBusy: true}
			}),
			wantPhase: fleetv1alpha1.RolloutProgressing,
		},
		{
			name: "every wave passed",
			obs: observe(fleet(), requested("pilot", "canary", "general"), succeeded("pilot-00"), succeeded(canaryDone...),
				func(o *Observation) {
					for i := range 10 {
						succeeded(fmt.Sprintf("general-%02d", i))(o)
					}
				}),
			wantPhase: fleetv1alpha1.RolloutSucceeded,
			wantWaves: []fleetv1alpha1.WavePhase{fleetv1alpha1.WaveSucceeded, fleetv1alpha1.WaveSucceeded, fleetv1alpha1.WaveSucceeded},
		},
		{
			name: "a rollback runs its waves without wave requests and with its own concurrency",
			obs: observe(fleet(), func(o *Observation) {
				o.Rollout.Spec.Direction = fleetv1alpha1.DirectionRollback
				o.RollbackMaxConcurrent = 1
			}),
			wantPhase: fleetv1alpha1.RolloutRollingBack,
			wantStart: []string{"pilot-00"},
		},
		{
			name: "a rollback does not halt on failures and reports them",
			obs: observe(&plan.WavePlan{Waves: fleet().Waves[:1]}, target("pilot-00", kargo.PromotionFailed), func(o *Observation) {
				o.Rollout.Spec.Direction = fleetv1alpha1.DirectionRollback
			}),
			wantPhase: fleetv1alpha1.RolloutFailed,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := Decide(tt.obs)
			require.Equal(t, tt.wantPhase, d.Phase, d.Message)
			require.Equal(t, tt.wantStart, startIDs(d))
			require.Equal(t, tt.wantAbort, d.Abort)
			if tt.wantWaves != nil {
				var got []fleetv1alpha1.WavePhase
				for _, w := range d.Waves {
					got = append(got, w.Phase)
				}
				require.Equal(t, tt.wantWaves, got)
			}
			if tt.assertions != nil {
				tt.assertions(t, d)
			}
		})
	}
}

// aborted is a rollout aborted a minute ago in wave canary with canary-00
// and canary-01 in flight, as its status recorded it then.
func aborted(o *Observation) {
	o.Rollout.Spec.Intent = fleetv1alpha1.IntentAbort
	at := metav1.NewTime(now.Add(-time.Minute))
	o.Rollout.Status = fleetv1alpha1.FleetRolloutStatus{
		Phase: fleetv1alpha1.RolloutAborted, FinishedAt: &at,
		Message: "aborted on request: no new target Promotion starts, running ones are aborted; 2 target(s) still in flight",
		Waves: []fleetv1alpha1.WaveProgress{
			{Name: "pilot", Phase: fleetv1alpha1.WaveSucceeded, Total: 1, Succeeded: 1, FinishedAt: &at},
			{Name: "canary", Phase: fleetv1alpha1.WaveProgressing, Total: 4, InFlight: 2, Pending: 2, StartedAt: &at},
			{Name: "general", Phase: fleetv1alpha1.WavePending, Total: 10, Pending: 10},
		},
	}
}

// finishedAt sets a target Promotion's finish time.
func finishedAt(at time.Time) func(*TargetObservation) {
	return func(t *TargetObservation) { t.Promotion.FinishedAt = at }
}

// abortRequested marks a target Promotion as asked to abort.
func abortRequested(t *TargetObservation) { t.Promotion.AbortRequested = true }

func TestDecideFinalRolloutSettles(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		obs         Observation
		wantCanary  fleetv1alpha1.WaveProgress
		wantMessage string
		wantAbort   []string
		wantRequeue bool
	}{
		{
			name: "in flight at the abort: nothing changed yet",
			obs: observe(fleet(), requested("pilot", "canary"), succeeded("pilot-00"), aborted,
				target("canary-00", kargo.PromotionRunning, func(t *TargetObservation) { t.Promotion.AbortRequested = true }),
				target("canary-01", kargo.PromotionRunning, func(t *TargetObservation) { t.Promotion.AbortRequested = true })),
			wantCanary:  fleetv1alpha1.WaveProgress{InFlight: 2, Pending: 2},
			wantMessage: "aborted on request: no new target Promotion starts, running ones are aborted; 2 target(s) still in flight",
			wantRequeue: true,
		},
		{
			name: "one Promotion inside its request finished Succeeded, one was aborted",
			obs: observe(fleet(), requested("pilot", "canary"), succeeded("pilot-00"), aborted,
				target("canary-00", kargo.PromotionSucceeded, finishedAt(now.Add(-30*time.Second)), abortRequested),
				target("canary-01", kargo.PromotionAborted, finishedAt(now.Add(-59*time.Second)), abortRequested)),
			wantCanary: fleetv1alpha1.WaveProgress{Succeeded: 1, Failed: 1, Pending: 2},
			wantMessage: "aborted on request: no new target Promotion starts, running ones are aborted; " +
				"2 target Promotion(s) finished after the abort (1 succeeded, 1 did not)",
		},
		{
			name: "a succeeded Promotion whose Stage does not show the Freight yet stays in flight",
			obs: observe(fleet(), requested("pilot", "canary"), succeeded("pilot-00"), aborted,
				target("canary-00", kargo.PromotionSucceeded, finishedAt(now.Add(-30*time.Second)), abortRequested,
					func(t *TargetObservation) { t.OnFreight = false }),
				target("canary-01", kargo.PromotionAborted, finishedAt(now.Add(-59*time.Second)), abortRequested)),
			wantCanary: fleetv1alpha1.WaveProgress{Failed: 1, InFlight: 1, Pending: 2},
			wantMessage: "aborted on request: no new target Promotion starts, running ones are aborted; " +
				"2 target Promotion(s) finished after the abort (1 succeeded, 1 did not); 1 target(s) still in flight",
			wantRequeue: true,
		},
		{
			name: "a Promotion still running past its deadline is failed and aborted",
			obs: observe(fleet(), requested("pilot", "canary"), succeeded("pilot-00"), aborted,
				target("canary-00", kargo.PromotionRunning, func(t *TargetObservation) {
					t.Promotion.CreatedAt = now.Add(-time.Hour)
				}),
				target("canary-01", kargo.PromotionSucceeded, finishedAt(now.Add(-2*time.Minute)), abortRequested)),
			wantCanary:  fleetv1alpha1.WaveProgress{Succeeded: 1, Failed: 1, Pending: 2},
			wantMessage: "aborted on request: no new target Promotion starts, running ones are aborted",
			wantAbort:   []string{"p-canary-00"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := Decide(tt.obs)
			require.Equal(t, fleetv1alpha1.RolloutAborted, d.Phase, "a final phase never changes")
			require.Empty(t, d.Start)
			require.Equal(t, tt.wantAbort, d.Abort)
			require.Equal(t, tt.wantMessage, d.Message)
			prev := tt.obs.Rollout.Status.Waves
			require.Len(t, d.Waves, len(prev))
			for i := range d.Waves {
				require.Equal(t, prev[i].Phase, d.Waves[i].Phase, "wave phases never change")
				require.Equal(t, prev[i].StartedAt, d.Waves[i].StartedAt)
				require.Equal(t, prev[i].FinishedAt, d.Waves[i].FinishedAt)
			}
			c := d.Waves[1]
			require.Equal(t, tt.wantCanary, fleetv1alpha1.WaveProgress{Succeeded: c.Succeeded, Failed: c.Failed,
				InFlight: c.InFlight, Pending: c.Pending})
			require.Equal(t, tt.wantRequeue, !d.RequeueAt.IsZero(), "in-flight targets bring the rollout back by their deadline")
		})
	}
}

func TestDecideFleetThresholdAcrossWaves(t *testing.T) {
	t.Parallel()
	p := fleet()
	max := 1
	p.FleetMaxFailures = &max
	// One failure in canary is within its wave's allowance and the fleet's; a
	// second in general crosses the fleet-wide one.
	o := observe(p, requested("pilot", "canary", "general"), succeeded("pilot-00", "canary-00", "canary-01", "canary-02"),
		target("canary-03", kargo.PromotionFailed), func(o *Observation) { o.ApprovedWaves["general"] = true })
	require.Equal(t, fleetv1alpha1.RolloutProgressing, Decide(o).Phase)

	p.Waves[2].MaxFailures = 5
	target("general-00", kargo.PromotionFailed)(&o)
	d := Decide(o)
	require.Equal(t, fleetv1alpha1.RolloutFailed, d.Phase, d.Message)
	require.Equal(t, plan.HaltFleetThreshold, d.Breach.Reason)
}

func TestJudge(t *testing.T) {
	t.Parallel()
	promo := func(phase kargo.PromotionPhase, age time.Duration) *PromotionObservation {
		return &PromotionObservation{Name: "p", Phase: phase, CreatedAt: now.Add(-age)}
	}
	// done is a Promotion created age ago that succeeded ago.
	done := func(age, ago time.Duration) *PromotionObservation {
		p := promo(kargo.PromotionSucceeded, age)
		p.FinishedAt = now.Add(-ago)
		return p
	}
	grace := Limits{ProgressDeadline: 10 * time.Minute, UnhealthyGrace: 2 * time.Minute}
	tests := []struct {
		name         string
		obs          TargetObservation
		limits       *Limits
		wantState    TargetState
		wantReason   string
		wantMessage  string
		wantDeadline time.Time
	}{
		{
			name:         "unhealthy within the grace waits until the grace ends",
			obs:          TargetObservation{Promotion: done(2*time.Minute, time.Minute), OnFreight: true, Health: kargo.HealthUnhealthy},
			limits:       &grace,
			wantState:    TargetInFlight,
			wantDeadline: now.Add(time.Minute),
		},
		{
			name:        "unhealthy for the grace after the Promotion succeeded fails long before the deadline",
			obs:         TargetObservation{Promotion: done(3*time.Minute, 2*time.Minute), OnFreight: true, Health: kargo.HealthUnhealthy},
			limits:      &grace,
			wantState:   TargetFailed,
			wantReason:  ReasonUnhealthy,
			wantMessage: "the Stage is unhealthy 2m0s after the Promotion succeeded (unhealthyGrace 2m0s)",
		},
		{
			name:      "healthy again within the grace succeeds",
			obs:       TargetObservation{Promotion: done(3*time.Minute, time.Minute), OnFreight: true, Health: kargo.HealthHealthy},
			limits:    &grace,
			wantState: TargetSucceeded,
		},
		{
			name:         "progressing health is not unhealthy: only the deadline applies",
			obs:          TargetObservation{Promotion: done(3*time.Minute, 3*time.Minute), OnFreight: false, Health: kargo.HealthProgressing},
			limits:       &grace,
			wantState:    TargetInFlight,
			wantDeadline: now.Add(7 * time.Minute),
		},
		{
			name:         "a deadline sooner than the grace comes first",
			obs:          TargetObservation{Promotion: done(9*time.Minute+30*time.Second, 10*time.Second), OnFreight: true, Health: kargo.HealthUnhealthy},
			limits:       &grace,
			wantState:    TargetInFlight,
			wantDeadline: now.Add(30 * time.Second),
		},
		{
			name:         "no grace (a snapshot from before the setting): only the deadline fails an unhealthy target",
			obs:          TargetObservation{Promotion: done(3*time.Minute, 3*time.Minute), OnFreight: true, Health: kargo.HealthUnhealthy},
			limits:       &Limits{ProgressDeadline: 10 * time.Minute},
			wantState:    TargetInFlight,
			wantDeadline: now.Add(7 * time.Minute),
		},
		{name: "no promotion", wantState: TargetPending},
		{name: "left before start", obs: TargetObservation{StageGone: true}, wantState: TargetSkipped},
		{name: "running", obs: TargetObservation{Promotion: promo(kargo.PromotionRunning, time.Minute)}, wantState: TargetInFlight},
		{name: "failed", obs: TargetObservation{Promotion: promo(kargo.PromotionFailed, time.Minute)}, wantState: TargetFailed, wantReason: ReasonPromotionFailed},
		{name: "errored", obs: TargetObservation{Promotion: promo(kargo.PromotionErrored, time.Minute)}, wantState: TargetFailed, wantReason: ReasonPromotionErrored},
		{name: "aborted", obs: TargetObservation{Promotion: promo(kargo.PromotionAborted, time.Minute)}, wantState: TargetFailed, wantReason: ReasonPromotionAborted},
		{
			name:      "succeeded, healthy, on freight, no verification",
			obs:       TargetObservation{Promotion: promo(kargo.PromotionSucceeded, time.Minute), OnFreight: true, Health: kargo.HealthHealthy},
			wantState: TargetSucceeded,
		},
		{
			name:      "succeeded but verification still running",
			obs:       TargetObservation{Promotion: promo(kargo.PromotionSucceeded, time.Minute), OnFreight: true, Verification: kargo.VerificationRunning},
			wantState: TargetInFlight,
		},
		{
			name:       "succeeded but verification failed",
			obs:        TargetObservation{Promotion: promo(kargo.PromotionSucceeded, time.Minute), OnFreight: true, Verification: kargo.VerificationFailed},
			wantState:  TargetFailed,
			wantReason: ReasonVerificationFailed,
		},
		{
			name:      "succeeded but unhealthy waits",
			obs:       TargetObservation{Promotion: promo(kargo.PromotionSucceeded, time.Minute), OnFreight: true, Health: kargo.HealthUnhealthy},
			wantState: TargetInFlight,
		},
		{
			name:       "unhealthy past the deadline fails as unhealthy",
			obs:        TargetObservation{Promotion: promo(kargo.PromotionSucceeded, time.Hour), OnFreight: true, Health: kargo.HealthUnhealthy},
			wantState:  TargetFailed,
			wantReason: ReasonUnhealthy,
		},
		{
			name:       "running past the deadline",
			obs:        TargetObservation{Promotion: promo(kargo.PromotionRunning, time.Hour)},
			wantState:  TargetFailed,
			wantReason: ReasonProgressDeadlineExceeded,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			limits := Limits{ProgressDeadline: 10 * time.Minute}
			if tt.limits != nil {
				limits = *tt.limits
			}
			j := Judge(tt.obs, limits, now)
			require.Equal(t, tt.wantState, j.State)
			require.Equal(t, tt.wantReason, j.Reason)
			if tt.wantMessage != "" {
				require.Equal(t, tt.wantMessage, j.Message)
			}
			if !tt.wantDeadline.IsZero() {
				require.Equal(t, tt.wantDeadline, j.DeadlineAt)
			}
		})
	}
}
