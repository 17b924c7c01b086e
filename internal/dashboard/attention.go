package dashboard

import (
	"cmp"
	"fmt"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/report"
)

// Attention levels of a fleet, most urgent first: what a person has to do
// something about comes before what only needs watching.
const (
	// AttentionFailed: a rollout breached a threshold or failed, or the
	// FleetStage is not ready.
	AttentionFailed = "failed"
	// AttentionApproval: a wave waits for a person to approve Freight.
	AttentionApproval = "approval"
	// AttentionDrifted: targets run Freight the fleet does not intend.
	AttentionDrifted = "drifted"
	// AttentionPaused: a person paused or aborted the rollout.
	AttentionPaused = "paused"
	// AttentionProgressing: a rollout moves on its own.
	AttentionProgressing = "progressing"
	// AttentionHealthy: nothing to do.
	AttentionHealthy = "healthy"
)

// attentionRank orders the levels, most urgent first.
var attentionRank = map[string]int{AttentionFailed: 0, AttentionApproval: 1, AttentionDrifted: 2, AttentionPaused: 3,
	AttentionProgressing: 4, AttentionHealthy: 5}

// Attention says how urgently a fleet needs a person, and why.
type Attention struct {
	// Level is one of the Attention* levels.
	Level string
	// Why says what a person would want to know first, in one sentence.
	Why string
}

// Rank orders levels: lower needs a person sooner.
func (a Attention) Rank() int { return attentionRank[a.Level] }

// FleetAttention judges a FleetStage from its status and its rollouts.
func FleetAttention(fs *fleetv1alpha1.FleetStage, rollouts []fleetv1alpha1.FleetRollout) Attention {
	byName := make(map[string]*fleetv1alpha1.FleetRollout, len(rollouts))
	for i := range rollouts {
		byName[rollouts[i].Name] = &rollouts[i]
	}
	for _, c := range fs.Status.Conditions {
		if c.Type == fleetv1alpha1.ReadyCondition && c.Status != "True" && c.Reason != "" {
			return Attention{AttentionFailed, fmt.Sprintf("Not ready (%s): %s", c.Reason, c.Message)}
		}
	}
	current := byName[fs.Status.CurrentRollout]
	if current != nil && current.Status.Phase.IsFinal() {
		current = nil
	}
	if current != nil {
		if of := byName[current.Spec.RollbackOf]; of != nil && breached(of) {
			return Attention{AttentionFailed, fmt.Sprintf("%s %s and is being rolled back: %s", of.Name,
				phaseVerb(of.Status.Phase), cmp.Or(of.Status.Message, string(of.Status.Phase)))}
		}
		if breached(current) {
			return Attention{AttentionFailed, fmt.Sprintf("%s %s: %s", current.Name, phaseVerb(current.Status.Phase),
				cmp.Or(current.Status.Message, string(current.Status.Phase)))}
		}
		if current.Status.Phase == fleetv1alpha1.RolloutWaitingForApproval {
			return Attention{AttentionApproval, cmp.Or(current.Status.Message, current.Name+" waits for approval")}
		}
	}
	if d := fs.Status.Drift; d != nil && d.Count > 0 {
		return Attention{AttentionDrifted, fmt.Sprintf("%d target(s) run Freight the fleet does not intend", d.Count)}
	}
	if a := fs.Status.Applications; a != nil && a.Foreign+a.Broken > 0 {
		return Attention{AttentionDrifted, fmt.Sprintf("%d target Application(s) changed outside the fleet, %d broken (Argo CD)",
			a.Foreign, a.Broken)}
	}
	if current != nil {
		return runningAttention(current)
	}
	return settledAttention(byName[fs.Status.LastRollout])
}

// runningAttention judges a fleet whose current rollout runs without
// trouble: paused, or how far it got.
func runningAttention(current *fleetv1alpha1.FleetRollout) Attention {
	if current.Status.Phase == fleetv1alpha1.RolloutPaused || current.Spec.Intent == fleetv1alpha1.IntentPause {
		return Attention{AttentionPaused, fmt.Sprintf("%s paused%s", current.Name, byActor(current))}
	}
	done, total := int32(0), int32(0)
	for _, w := range current.Status.Waves {
		done += w.Succeeded
		total += w.Total
	}
	return Attention{AttentionProgressing, fmt.Sprintf("%s: %s to %s, %d/%d targets", current.Name,
		cmp.Or(current.Spec.Direction, fleetv1alpha1.DirectionForward), report.DisplayFreight(report.FreightName{Name: current.Spec.Freight.Name}), done, total)}
}

// settledAttention judges a fleet with no rollout running by its last
// rollout, nil when it never had one.
func settledAttention(last *fleetv1alpha1.FleetRollout) Attention {
	switch {
	case last != nil && breached(last):
		return Attention{AttentionFailed, fmt.Sprintf("%s %s: %s", last.Name, phaseVerb(last.Status.Phase),
			cmp.Or(last.Status.Message, string(last.Status.Phase)))}
	case last != nil && last.Status.Phase == fleetv1alpha1.RolloutAborted:
		return Attention{AttentionPaused, fmt.Sprintf("%s aborted%s", last.Name, byActor(last))}
	case last != nil:
		return Attention{AttentionHealthy, fmt.Sprintf("%s %s", last.Name, phaseVerb(last.Status.Phase))}
	}
	return Attention{AttentionHealthy, "No rollout yet"}
}

// breached reports whether a rollout stopped on failures.
func breached(ro *fleetv1alpha1.FleetRollout) bool {
	return ro.Status.Phase == fleetv1alpha1.RolloutHalted || ro.Status.Phase == fleetv1alpha1.RolloutFailed
}

func phaseVerb(p fleetv1alpha1.RolloutPhase) string {
	switch p {
	case fleetv1alpha1.RolloutHalted:
		return "halted"
	case fleetv1alpha1.RolloutFailed:
		return "failed"
	case fleetv1alpha1.RolloutSucceeded:
		return "succeeded"
	case fleetv1alpha1.RolloutSuperseded:
		return "was superseded"
	}
	return "is " + string(cmp.Or(p, fleetv1alpha1.RolloutPending))
}

// byActor names who last set a rollout's intent, when recorded.
func byActor(ro *fleetv1alpha1.FleetRollout) string {
	if a := ro.Annotations[fleetv1alpha1.IntentActorAnnotation]; a != "" {
		return " by " + a
	}
	return ""
}
