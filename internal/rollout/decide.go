package rollout

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
	"github.com/kargo-fleet/kargo-fleet/internal/strutil"
)

// maxFailureExamples bounds the examples kept per failure reason.
const maxFailureExamples = 5

// Start is a target Promotion to create.
type Start struct {
	Target plan.Target
	Wave   string
	// StageUID is the UID of the target Stage the Promotion is for, when
	// the Stage was observed: the Promotion records it, so a Stage
	// re-created later is told apart from this one.
	StageUID types.UID
}

// Decision is what the rollout does next.
type Decision struct {
	// Start are the target Promotions to create now.
	Start []Start
	// MoreToStart says free slots are left for targets beyond
	// Observation.MaxStarts: decide again at once.
	MoreToStart bool
	// HeldBatch says the decision held back a batch too small to start
	// (holdBatch): the reconciler remembers since when, in
	// Observation.BatchHeldSince, until a batch starts.
	HeldBatch bool
	// Abort names running target Promotions to abort.
	Abort []string
	// Phase and Message are the rollout's new phase and explanation.
	Phase   fleetv1alpha1.RolloutPhase
	Message string
	// Waves is the per-wave progress, in plan order.
	Waves []fleetv1alpha1.WaveProgress
	// Failures groups failed targets by reason.
	Failures []fleetv1alpha1.FailureGroup
	// Breach is set when a threshold is breached (now or earlier): the
	// rollout's rollback policy then applies (PlanRollback).
	Breach *plan.ThresholdVerdict
	// PromoteWave names the wave whose wave Stage kargo-fleet promotes the
	// rollout's Freight into now: the previous wave passed and soaked.
	PromoteWave string
	// RecoverWave, when set, is a wave whose wave Stage Promotion errored:
	// kargo-fleet promotes the rollout's Freight into the wave Stage again.
	RecoverWave *WaveRecovery
	// RequeueAt is when to look again if no event comes first (a progress
	// deadline, a window opening); zero when events suffice.
	RequeueAt time.Time
}

// waveState accumulates one wave's judgements.
type waveState struct {
	pw                                         *plan.PlannedWave
	succeeded, failed, inFlight, pending, skip int
	// done[i] says the wave's i-th member is finished: succeeded, failed,
	// skipped or blocked.
	done            []bool
	inFlightTargets []*plan.Target
	// held are the members without a Promotion of the rollout whose Stage
	// another Promotion runs on or that the FleetStage did not record, in
	// plan order: they hold a slot (scheduleRequest).
	held []*plan.Target
	// blocked counts the members a FreightPolicy keeps off the Freight,
	// holding counts those of them that keep the wave from passing, and
	// blockedNote names the first, with the rules.
	blocked, holding int
	blockedNote      string
}

// Decide computes the next step of a rollout from an observation. It is
// deterministic and does no I/O.
func Decide(o Observation) Decision {
	d := decide(o)
	planRecovery(o, &d)
	return d
}

// decide decides the targets, the waves and the rollout's phase.
func decide(o Observation) Decision {
	r := o.Rollout
	d := Decision{Phase: r.Status.Phase}
	if d.Phase == "" {
		d.Phase = fleetv1alpha1.RolloutPending
	}
	wds := analysisDecisions(o)
	states, fails := judgeAll(o, &d, wds)
	d.Failures = groupFailures(fails)
	fleetFailed := len(fails)

	breached, current, gate := walkWaves(o, &d, states, wds)

	switch {
	case r.Status.Phase.IsFinal():
		return settleFinal(o, d, states)
	case r.Spec.Intent == fleetv1alpha1.IntentAbort:
		d.Abort = inFlightPromotions(o, states)
		d.Phase, d.Message = fleetv1alpha1.RolloutAborted, abortedMessage(o, states, o.Now)
		return d
	case breached != nil:
		return halt(o, d, states, breached)
	case gate != nil:
		return analysing(o, d, current, *gate)
	case current < 0:
		return concluded(o, d, states, fleetFailed)
	}
	return run(o, d, states, current)
}

// settleFinal refreshes the counts of a rollout in a final phase while
// target Promotions it started are still in flight: an aborted or
// superseded rollout starts nothing more, but Kargo finishes what it runs
// (an abort does not stop a step inside its request), and the counts must
// settle to what the targets run. The rollout's and the waves' phases never
// change; only an aborted rollout's message changes, to say what finished
// after the abort.
func settleFinal(o Observation, d Decision, states []*waveState) Decision {
	r := o.Rollout
	for i := range d.Waves {
		for _, prev := range r.Status.Waves {
			if prev.Name != d.Waves[i].Name {
				continue
			}
			counts := d.Waves[i]
			d.Waves[i] = prev
			d.Waves[i].Total, d.Waves[i].Succeeded, d.Waves[i].Failed = counts.Total, counts.Succeeded, counts.Failed
			d.Waves[i].InFlight, d.Waves[i].Pending = counts.InFlight, counts.Pending
		}
	}
	d.Message = r.Status.Message
	if r.Status.Phase == fleetv1alpha1.RolloutAborted {
		abortedAt := o.Now
		if r.Status.FinishedAt != nil {
			abortedAt = r.Status.FinishedAt.Time
		}
		d.Message = abortedMessage(o, states, abortedAt)
	}
	return d
}

// abortedMessage says that the rollout was aborted, how many of its target
// Promotions are still in flight and how many of those asked to abort
// finished after the abort at abortedAt, and how.
func abortedMessage(o Observation, states []*waveState, abortedAt time.Time) string {
	inFlight := 0
	for _, ws := range states {
		inFlight += ws.inFlight
	}
	msg := "aborted on request: no new target Promotion starts, running ones are aborted"
	finished, succeeded := 0, 0
	for _, ws := range states {
		for j := range ws.pw.Members {
			// Asked to abort and finished since: Kargo's times have whole
			// seconds, so the abort request tells what was still running.
			p := o.Targets[ws.pw.Members[j].ID].Promotion
			if p == nil || !p.AbortRequested || !p.Phase.IsTerminal() || p.FinishedAt.Before(abortedAt) {
				continue
			}
			finished++
			if p.Phase == kargo.PromotionSucceeded {
				succeeded++
			}
		}
	}
	if finished > 0 {
		msg += fmt.Sprintf("; %d target Promotion(s) finished after the abort (%d succeeded, %d did not)",
			finished, succeeded, finished-succeeded)
	}
	if inFlight > 0 {
		msg += fmt.Sprintf("; %d target(s) still in flight", inFlight)
	}
	return msg
}

// halt stops new starts after a breach. The rollout stays Halted while
// Promotions are in flight (aborting them if the policy says so) and fails
// when none is left.
func halt(o Observation, d Decision, states []*waveState, v *plan.ThresholdVerdict) Decision {
	v = recount(o, states, v)
	d.Breach = v
	inFlight := 0
	for i, ws := range states {
		inFlight += ws.inFlight
		if d.Waves[i].Phase == fleetv1alpha1.WaveHalted && ws.inFlight == 0 {
			d.Waves[i].Phase = fleetv1alpha1.WaveFailed
			if d.Waves[i].FinishedAt == nil {
				t := metav1.NewTime(o.Now)
				d.Waves[i].FinishedAt = &t
			}
		}
	}
	if o.OnHalt == fleetv1alpha1.InFlightAbort {
		d.Abort = append(d.Abort, inFlightPromotions(o, states)...)
	}
	if inFlight > 0 {
		d.Phase = fleetv1alpha1.RolloutHalted
		d.Message = fmt.Sprintf("halted: %s; %d target Promotion(s) in flight finish, no new one starts", v.Message, inFlight)
		return d
	}
	d.Phase = fleetv1alpha1.RolloutFailed
	d.Message = "halted: " + v.Message
	return d
}

// recount restates a breach with today's failure counts. A breach is
// recorded with the counts of its moment, and targets in flight then may
// still fail: every message about the halt (the rollout's, its
// ThresholdBreached condition's, the wave Promotion's) must count as the
// waves' progress does. A breach no recount confirms (a failed target was
// retried by hand and succeeded) keeps its recorded message: a halt is never
// undone.
func recount(o Observation, states []*waveState, v *plan.ThresholdVerdict) *plan.ThresholdVerdict {
	cumulative := 0
	for _, ws := range states {
		cumulative += ws.failed
		th, _ := o.Plan.Thresholds(ws.pw.Name)
		if now := plan.Verdict(th, plan.FailureCounts{Wave: ws.failed, Fleet: cumulative}); now.Halted() && now.Reason == v.Reason {
			return &now
		}
	}
	return v
}

// previousBreach returns the breach recorded in the rollout's status, so a
// halt is never undone by a later observation (e.g. a failed target whose
// Promotion is retried by hand).
func previousBreach(r *fleetv1alpha1.FleetRollout) *plan.ThresholdVerdict {
	c := metaFind(r.Status.Conditions, fleetv1alpha1.ThresholdBreachedCondition)
	if c == nil || c.Status != metav1.ConditionTrue {
		return nil
	}
	return &plan.ThresholdVerdict{Decision: plan.VerdictHalt, Reason: plan.HaltReason(c.Reason), Message: c.Message}
}

func inFlightPromotions(o Observation, states []*waveState) []string {
	var out []string
	for _, ws := range states {
		for _, t := range ws.inFlightTargets {
			if p := o.Targets[t.ID].Promotion; p != nil && !p.AbortRequested && !p.Phase.IsTerminal() {
				out = append(out, p.Name)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// progress turns a wave's state into its status entry, keeping the start and
// finish times already recorded.
func progress(ws *waveState, prev []fleetv1alpha1.WaveProgress, _ time.Time) fleetv1alpha1.WaveProgress {
	wp := fleetv1alpha1.WaveProgress{
		Name: ws.pw.Name, Phase: fleetv1alpha1.WavePending,
		Total: int32(len(ws.pw.Members)), Succeeded: int32(ws.succeeded), Failed: int32(ws.failed),
		InFlight: int32(ws.inFlight), Pending: int32(ws.pending), Blocked: int32(ws.blocked),
	}
	for i := range prev {
		if prev[i].Name == ws.pw.Name {
			wp.StartedAt, wp.FinishedAt, wp.Analysis = prev[i].StartedAt, prev[i].FinishedAt, prev[i].Analysis
			if prev[i].Phase == fleetv1alpha1.WaveSucceeded || prev[i].Phase == fleetv1alpha1.WaveFailed ||
				prev[i].Phase == fleetv1alpha1.WaveHalted {
				wp.Phase = prev[i].Phase
			}
		}
	}
	return wp
}

type failure struct{ name, reason, message string }

func groupFailures(fails []failure) []fleetv1alpha1.FailureGroup {
	byReason := map[string]*fleetv1alpha1.FailureGroup{}
	slices.SortFunc(fails, func(a, b failure) int { return cmp.Compare(a.name, b.name) })
	for _, f := range fails {
		g := byReason[f.reason]
		if g == nil {
			g = &fleetv1alpha1.FailureGroup{Reason: f.reason}
			byReason[f.reason] = g
		}
		g.Count++
		if len(g.Examples) < maxFailureExamples {
			g.Examples = append(g.Examples, fleetv1alpha1.TargetSample{Name: f.name, Reason: strutil.Ellipsis(f.message, 256)})
		}
	}
	out := make([]fleetv1alpha1.FailureGroup, 0, len(byReason))
	for _, g := range byReason {
		out = append(out, *g)
	}
	slices.SortFunc(out, func(a, b fleetv1alpha1.FailureGroup) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Reason, b.Reason))
	})
	if len(out) == 0 {
		return nil
	}
	return out
}

func countSucceeded(states []*waveState) int {
	n := 0
	for _, ws := range states {
		n += ws.succeeded
	}
	return n
}

func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

func metaFind(conds []metav1.Condition, t string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

// quorumMissing says the wave requires an N-person approval not given yet.
func quorumMissing(o Observation, wave string) bool {
	q, ok := o.Quorums[wave]
	return ok && !q.Met()
}

// countBlocked counts the members a FreightPolicy kept off the Freight.
func countBlocked(states []*waveState) int {
	n := 0
	for _, ws := range states {
		n += ws.blocked
	}
	return n
}
