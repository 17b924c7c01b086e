package rollout

import "time"

const (
	// BatchWait is the longest a decision holds back a batch smaller than
	// minBatch while it waits for more slots to free.
	BatchWait = 5 * time.Second
	// maxMinBatch caps minBatch.
	maxMinBatch = 16
)

// minBatch is the smallest batch a wave of maxConcurrent slots starts
// without waiting: a sixteenth of its slots, at most maxMinBatch. Each
// batch costs a claim (a status write) besides its Promotions; when Kargo
// verifies targets one by one (its Stage workers take them in turn, a
// second or more each on a large fleet), a wave that refilled every slot
// the moment it freed would claim once per target. Waiting for a
// sixteenth of the slots keeps claims to a few per hundred targets, and
// costs the wave at most that sixteenth of its slots for BatchWait.
func minBatch(maxConcurrent int) int {
	return min(maxMinBatch, (maxConcurrent+15)/16)
}

// holdBatch reports whether a forward wave's decision holds back its
// starts: fewer than minBatch, while more targets of the wave are pending
// than it would start (the wave's last ones start at once), targets are in
// flight (their finishing frees the slots waited for), and the hold began
// less than BatchWait ago. heldSince is when the rollout's decisions began
// holding (zero: not holding yet).
func holdBatch(starts, pending, inFlight, maxConcurrent int, heldSince, now time.Time) bool {
	if starts == 0 || starts >= minBatch(maxConcurrent) || starts >= pending || inFlight == 0 {
		return false
	}
	return heldSince.IsZero() || now.Before(heldSince.Add(BatchWait))
}
