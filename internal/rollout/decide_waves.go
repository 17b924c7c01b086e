package rollout

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/analysis"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
	"github.com/kargo-fleet/kargo-fleet/internal/strutil"
)

// judgeAll judges every member and returns per-wave states and the failures.
func judgeAll(o Observation, d *Decision, wds map[string]analysis.WaveDecision) ([]*waveState, []failure) {
	var fails []failure
	states := make([]*waveState, len(o.Plan.Waves))
	for i := range o.Plan.Waves {
		pw := &o.Plan.Waves[i]
		ws := &waveState{pw: pw, done: make([]bool, len(pw.Members))}
		states[i] = ws
		analysisFailed := analysisFailedTargets(wds, pw.Name)
		for pos := range pw.Members {
			t := &pw.Members[pos]
			obs := o.Targets[t.ID]
			j := Judge(obs, Limits{ProgressDeadline: pw.ProgressDeadline, UnhealthyGrace: pw.UnhealthyGrace}, o.Now)
			if j.State == TargetPending && o.Expected[t.ID] {
				j.State = TargetInFlight
			}
			if reason, ok := analysisFailed[t.ID]; ok && j.State == TargetSucceeded {
				// Its own metric of the wave's analysis failed: it counts
				// toward the wave's threshold like any failed target.
				j.State, j.Reason, j.Message = TargetFailed, ReasonAnalysisFailed, reason
			}
			if (obs.StageBusy || obs.StageUnrecorded) && obs.Promotion == nil {
				ws.held = append(ws.held, t)
			}
			if f := ws.count(o, d, pos, t, obs, j); f != nil {
				fails = append(fails, *f)
			}
		}
	}
	return states, fails
}

// count adds one member's judgement to its wave's state, and to the decision
// what the member asks for: a look again at its deadline, the abort of a
// Promotion past it. It returns the member's failure, if it failed.
func (ws *waveState) count(o Observation, d *Decision, pos int, t *plan.Target, obs TargetObservation, j Judgement) *failure {
	switch j.State {
	case TargetPending:
		ws.pending++
		if !j.DeadlineAt.IsZero() {
			d.RequeueAt = earliest(d.RequeueAt, j.DeadlineAt)
		}
	case TargetInFlight:
		ws.inFlight++
		ws.inFlightTargets = append(ws.inFlightTargets, t)
		if !j.DeadlineAt.IsZero() {
			d.RequeueAt = earliest(d.RequeueAt, j.DeadlineAt)
		}
	case TargetSucceeded:
		ws.succeeded++
		ws.done[pos] = true
	case TargetSkipped:
		ws.skip++
		ws.done[pos] = true
	case TargetBlocked:
		// Never started. A rollback is the way out of trouble and
		// never waits: it leaves blocked targets where they are.
		ws.blocked++
		ws.done[pos] = true
		if obs.Blocked.Hold() && o.Rollout.Spec.Direction != fleetv1alpha1.DirectionRollback {
			ws.holding++
		} else {
			ws.skip++
		}
		if ws.blockedNote == "" {
			ws.blockedNote = strutil.Ellipsis(t.Name+" ("+j.Message+")", 300)
		}
	case TargetFailed:
		ws.failed++
		ws.done[pos] = true
		if j.Reason == ReasonProgressDeadlineExceeded && obs.Promotion != nil && !obs.Promotion.Phase.IsTerminal() &&
			!obs.Promotion.AbortRequested {
			// A target past its deadline is failed; stop Kargo from
			// finishing it behind the rollout's back.
			d.Abort = append(d.Abort, obs.Promotion.Name)
		}
		return &failure{name: t.Name, reason: j.Reason, message: j.Message}
	}
	return nil
}

// walkWaves sets every wave's progress, in plan order, and finds the current
// wave (-1 when every wave passed), the threshold breach that halts the
// rollout, if any, and the analysis gate the current wave waits at, if any.
func walkWaves(o Observation, d *Decision, states []*waveState, wds map[string]analysis.WaveDecision) (
	breached *plan.ThresholdVerdict, current int, gate *analysisGate) {
	r := o.Rollout
	rollback := r.Spec.Direction == fleetv1alpha1.DirectionRollback
	breached = previousBreach(r)
	current = -1
	cumulative := 0
	for i, ws := range states {
		cumulative += ws.failed
		wp := progress(ws, r.Status.Waves, o.Now)
		// No earlier wave holds a forward rollout: this wave's thresholds
		// and analysis decide.
		open := !rollback && breached == nil && current < 0
		if open && ws.succeeded+ws.failed+ws.inFlight > 0 {
			if v := thresholdBreach(o, ws, cumulative); v != nil {
				breached, current = v, i
				wp.Phase = fleetv1alpha1.WaveHalted
				d.Waves = append(d.Waves, wp)
				continue
			}
		}
		if wp.Phase == fleetv1alpha1.WaveSucceeded {
			// A wave that passed stays passed when a policy added later
			// blocks some of its targets.
			ws.skip, ws.holding = ws.skip+ws.holding, 0
		}
		finished := ws.targetsDone()
		if finished && open && ws.failed <= ws.pw.MaxFailures && wp.Phase != fleetv1alpha1.WaveSucceeded {
			// The wave's targets are done: it passes when its analysis does.
			g := gateAnalysis(o, &wp, wds)
			switch {
			case g.breach != nil:
				breached, current = g.breach, i
				wp.Phase = fleetv1alpha1.WaveHalted
				d.Waves = append(d.Waves, wp)
				continue
			case !g.passed:
				current, gate = i, &g
				d.Waves = append(d.Waves, wp)
				continue
			}
		}
		switch {
		case finished && (rollback || ws.failed <= ws.pw.MaxFailures):
			wp.Phase = fleetv1alpha1.WaveSucceeded
		case current >= 0 || breached != nil:
			// A later wave, or any wave after a breach: it waits.
		default:
			current = i
		}
		stampFinished(&wp, o)
		d.Waves = append(d.Waves, wp)
	}
	return breached, current, gate
}

// targetsDone says no member of the wave is pending, in flight or held back
// by a FreightPolicy.
func (ws *waveState) targetsDone() bool {
	return ws.pending == 0 && ws.inFlight == 0 && ws.holding == 0
}

// thresholdBreach judges a started wave's thresholds with the failures so
// far, in wave order, so the fleet-wide threshold halts at the wave where it
// was crossed. nil when they hold.
func thresholdBreach(o Observation, ws *waveState, cumulative int) *plan.ThresholdVerdict {
	th, _ := o.Plan.Thresholds(ws.pw.Name)
	if v := plan.Verdict(th, plan.FailureCounts{Wave: ws.failed, Fleet: cumulative}); v.Halted() {
		return &v
	}
	return nil
}

// stampFinished records when a wave passed, the first time it is seen passed.
func stampFinished(wp *fleetv1alpha1.WaveProgress, o Observation) {
	if wp.Phase == fleetv1alpha1.WaveSucceeded && wp.FinishedAt == nil {
		t := metav1.NewTime(o.Now)
		wp.FinishedAt = &t
	}
}

// concluded settles a rollout whose every wave passed: a rollback fails if
// any target could not be returned to the Freight.
func concluded(o Observation, d Decision, states []*waveState, fleetFailed int) Decision {
	r := o.Rollout
	if r.Spec.Direction == fleetv1alpha1.DirectionRollback {
		d.Phase = fleetv1alpha1.RolloutSucceeded
		d.Message = fmt.Sprintf("rolled back %d target(s) to Freight %s", countSucceeded(states), r.Spec.Freight.Name)
		if fleetFailed > 0 {
			d.Phase = fleetv1alpha1.RolloutFailed
			d.Message = fmt.Sprintf("rollback finished with %d target(s) that could not be returned to Freight %s", fleetFailed, r.Spec.Freight.Name)
		}
		return d
	}
	d.Phase, d.Message = fleetv1alpha1.RolloutSucceeded, fmt.Sprintf("every wave passed with Freight %s", r.Spec.Freight.Name)
	if n := countBlocked(states); n > 0 {
		d.Message += fmt.Sprintf("; %d target(s) kept off it by FreightPolicy (blockedTargets Skip) run what they ran", n)
	}
	return d
}
