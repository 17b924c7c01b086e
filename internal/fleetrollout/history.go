package fleetrollout

import (
	"slices"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

// DefaultHistoryLimit is how many finished forward rollouts of a FleetStage
// are kept when spec.policy.historyLimit is unset.
const DefaultHistoryLimit = 10

// HistoryLimit returns the FleetStage's history limit, defaulted.
func HistoryLimit(fs *fleetv1alpha1.FleetStage) int {
	if l := fs.Spec.Policy.HistoryLimit; l != nil && *l > 0 {
		return int(*l)
	}
	return DefaultHistoryLimit
}

// Expired returns the rollouts of one FleetStage that its history limit no
// longer keeps, oldest first: the finished forward rollouts older than the
// newest limit of them, each with its rollbacks. Nothing unfinished expires:
// a forward rollout with a rollback that still runs stays with all its
// rollbacks, and so do rollbacks whose rollout is kept. Finished rollbacks
// whose rollout is gone expire with the forward rollouts that are older
// than them.
func Expired(all []*fleetv1alpha1.FleetRollout, limit int) []*fleetv1alpha1.FleetRollout {
	sorted := slices.Clone(all)
	slices.SortFunc(sorted, Compare)
	rollbacks := map[string][]*fleetv1alpha1.FleetRollout{}
	forward := map[string]bool{}
	for _, ro := range sorted {
		if ro.Spec.Direction == fleetv1alpha1.DirectionRollback {
			rollbacks[ro.Spec.RollbackOf] = append(rollbacks[ro.Spec.RollbackOf], ro)
		} else {
			forward[ro.Name] = true
		}
	}
	var finished []*fleetv1alpha1.FleetRollout
	for _, ro := range sorted {
		if ro.Spec.Direction != fleetv1alpha1.DirectionRollback && ro.Status.Phase.IsFinal() {
			finished = append(finished, ro)
		}
	}
	if len(finished) == 0 {
		return nil
	}
	allFinal := func(rbs []*fleetv1alpha1.FleetRollout) bool {
		return !slices.ContainsFunc(rbs, func(rb *fleetv1alpha1.FleetRollout) bool { return !rb.Status.Phase.IsFinal() })
	}
	keepFrom := max(len(finished)-limit, 0)
	old, oldest := finished[:keepFrom], finished[keepFrom]
	var out []*fleetv1alpha1.FleetRollout
	for _, ro := range old {
		if rbs := rollbacks[ro.Name]; allFinal(rbs) {
			out = append(out, ro)
			out = append(out, rbs...)
		}
	}
	for of, rbs := range rollbacks {
		if forward[of] {
			continue
		}
		for _, rb := range rbs {
			if rb.Status.Phase.IsFinal() && Compare(rb, oldest) < 0 {
				out = append(out, rb)
			}
		}
	}
	slices.SortFunc(out, Compare)
	return out
}

// MaxHistoryRecords bounds FleetStage.status.history.
const MaxHistoryRecords = 20

// Record summarises a rollout for FleetStage.status.history.
func Record(ro *fleetv1alpha1.FleetRollout) fleetv1alpha1.RolloutRecord {
	return fleetv1alpha1.RolloutRecord{Name: ro.Name, Direction: ro.Spec.Direction, Freight: ro.Spec.Freight.Name,
		Actor: ro.Spec.Actor, Phase: ro.Status.Phase, StartedAt: ro.Status.StartedAt.DeepCopy(),
		FinishedAt: ro.Status.FinishedAt.DeepCopy()}
}

// AppendHistory returns history with the records of rollouts not in it yet
// appended, keeping the newest MaxHistoryRecords.
func AppendHistory(history []fleetv1alpha1.RolloutRecord, rollouts []*fleetv1alpha1.FleetRollout) []fleetv1alpha1.RolloutRecord {
	out := slices.Clone(history)
	for _, ro := range rollouts {
		if !slices.ContainsFunc(out, func(r fleetv1alpha1.RolloutRecord) bool { return r.Name == ro.Name }) {
			out = append(out, Record(ro))
		}
	}
	if len(out) > MaxHistoryRecords {
		out = out[len(out)-MaxHistoryRecords:]
	}
	return out
}

// Deleted returns the FleetStage's history record of the rollout named
// name, or nil: a rollout recorded there is gone (pruned, or deleted, which
// aborts it) and is never started again under that name.
func Deleted(fs *fleetv1alpha1.FleetStage, name string) *fleetv1alpha1.RolloutRecord {
	for i := range fs.Status.History {
		if fs.Status.History[i].Name == name {
			return &fs.Status.History[i]
		}
	}
	return nil
}
