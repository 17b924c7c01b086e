package report

import (
	"cmp"
	"fmt"
	"strings"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetrollout"
)

// Exit codes of `kargo-fleet status --wait`, one per way a rollout ends
// that a pipeline may want to tell apart. 1 is every other error (no such
// FleetStage, no access).
const (
	ExitSucceeded  = 0
	ExitFailed     = 2
	ExitRolledBack = 3
	ExitAborted    = 4
	ExitWaiting    = 5
	ExitTimedOut   = 6
)

// WaitFor says which rollout a wait follows.
type WaitFor struct {
	// Freight, when set, is the Freight whose forward rollout is waited
	// for (it may not exist yet: a pipeline waits right after promoting).
	// Empty: the FleetStage's current rollout, else its last one.
	Freight string
	// ThroughApprovals keeps waiting while the rollout waits for an
	// approval or is paused, instead of ending the wait.
	ThroughApprovals bool
}

// WaitState is where a waited-for rollout stands.
type WaitState struct {
	// Rollout is the rollout followed; empty while none is found.
	Rollout string
	// Done says the wait ends, with Code.
	Done bool
	Code int
	// Line is one line for a CI log: the rollout, its phase and progress.
	Line string
}

// Wait finds the rollout a wait follows among a FleetStage's rollouts and
// says whether the wait ends, and how.
func Wait(fs *fleetv1alpha1.FleetStage, rollouts []fleetv1alpha1.FleetRollout, w WaitFor) WaitState {
	ro := followed(fs, rollouts, w.Freight)
	if ro == nil {
		what := "a rollout"
		if w.Freight != "" {
			what = "the rollout of Freight " + w.Freight
		}
		return WaitState{Line: fmt.Sprintf("FleetStage %s/%s: waiting for %s to start", fs.Namespace, fs.Name, what)}
	}
	s := WaitState{Rollout: ro.Name, Line: progressLine(ro)}
	var rollback *fleetv1alpha1.FleetRollout
	for i := range rollouts {
		if rollouts[i].Spec.RollbackOf == ro.Name {
			rollback = &rollouts[i]
		}
	}
	phase := ro.Status.Phase
	switch {
	case phase == fleetv1alpha1.RolloutSucceeded:
		s.Done, s.Code = true, ExitSucceeded
	case rollback != nil:
		s.Done, s.Code = true, ExitRolledBack
		s.Line += fmt.Sprintf("; rolled back by %s (%s)", rollback.Name, cmp.Or(string(rollback.Status.Phase), "Pending"))
	case phase == fleetv1alpha1.RolloutFailed || phase == fleetv1alpha1.RolloutHalted:
		s.Done, s.Code = true, ExitFailed
	case phase == fleetv1alpha1.RolloutAborted || phase == fleetv1alpha1.RolloutSuperseded:
		s.Done, s.Code = true, ExitAborted
	case (phase == fleetv1alpha1.RolloutWaitingForApproval || phase == fleetv1alpha1.RolloutPaused) && !w.ThroughApprovals:
		s.Done, s.Code = true, ExitWaiting
	}
	return s
}

// followed returns the rollout a wait follows: the forward rollout of
// freight (the newest), else the FleetStage's current rollout, else its
// last one.
func followed(fs *fleetv1alpha1.FleetStage, rollouts []fleetv1alpha1.FleetRollout, freight string) *fleetv1alpha1.FleetRollout {
	var out *fleetv1alpha1.FleetRollout
	for i := range rollouts {
		ro := &rollouts[i]
		switch {
		case freight != "":
			if ro.Spec.Freight.Name == freight && ro.Spec.Direction != fleetv1alpha1.DirectionRollback &&
				(out == nil || fleetrollout.Compare(ro, out) > 0) {
				out = ro
			}
		case ro.Name == cmp.Or(fs.Status.CurrentRollout, fs.Status.LastRollout):
			out = ro
		}
	}
	return out
}

// progressLine is one line about a rollout: its phase, each wave's
// counts and its message.
func progressLine(ro *fleetv1alpha1.FleetRollout) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (Freight %s): %s", ro.Name, DisplayFreight(FreightName{Name: ro.Spec.Freight.Name}),
		cmp.Or(string(ro.Status.Phase), "Pending"))
	for _, w := range ro.Status.Waves {
		fmt.Fprintf(&b, "; %s %d/%d", w.Name, w.Succeeded, w.Total)
		if w.Failed > 0 {
			fmt.Fprintf(&b, " (%d failed)", w.Failed)
		}
	}
	if ro.Status.Message != "" {
		fmt.Fprintf(&b, "; %s", ro.Status.Message)
	}
	return b.String()
}
