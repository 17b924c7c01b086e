package rollout

import (
	"time"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

const (
	// ProgressWriteInterval is the least time between two status writes of
	// a rollout that only change counts.
	ProgressWriteInterval = time.Second
	// ProgressWriteMaxWait is the longest a count change waits to be
	// written.
	ProgressWriteMaxWait = 30 * time.Second
	// progressWriteSteps is the share of a rollout's targets (one
	// progressWriteSteps-th) that must start or finish before a count-only
	// write: each target starts once and finishes once, so a rollout makes
	// at most twice progressWriteSteps such writes, beside the
	// ProgressWriteMaxWait ones.
	progressWriteSteps = 100
)

// ProgressWriteDue says whether a status write that only changes counts
// (from written, the status last written, to next) is due after since,
// and if not, how long until it is at the latest. Such a write waits
// ProgressWriteInterval, then until the targets that started or finished
// since the last write reach one progressWriteSteps-th of the rollout
// (any one, in a rollout of up to progressWriteSteps targets), or
// ProgressWriteMaxWait has passed. The writes per target thus stay bounded
// however long Kargo takes per target: a rollout of 1,000 targets whose
// verification Kargo spreads over half an hour writes at most 200 + 60
// times, not once a second.
func ProgressWriteDue(written, next *fleetv1alpha1.FleetRolloutStatus, since time.Duration) (bool, time.Duration) {
	switch {
	case since < ProgressWriteInterval:
		return false, ProgressWriteInterval - since
	case since >= ProgressWriteMaxWait:
		return true, 0
	}
	total, moved := 0, 0
	before := map[string]fleetv1alpha1.WaveProgress{}
	for _, w := range written.Waves {
		before[w.Name] = w
	}
	for _, w := range next.Waves {
		total += int(w.Total)
		b := before[w.Name]
		moved += absDiff(finished(w), finished(b)) + absDiff(int(w.Pending), int(b.Pending))
	}
	step := max(1, (total+progressWriteSteps-1)/progressWriteSteps)
	if moved >= step {
		return true, 0
	}
	return false, ProgressWriteMaxWait - since
}

// finished counts a wave's targets that are through, one way or another.
func finished(w fleetv1alpha1.WaveProgress) int {
	return int(w.Succeeded + w.Failed)
}

func absDiff(a, b int) int {
	if a > b {
		return a - b
	}
	return b - a
}
