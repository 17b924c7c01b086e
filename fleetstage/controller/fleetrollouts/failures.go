package fleetrollouts

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// failureSignal counts, per rollout, the events of its target Promotions
// ending without success. A batch of creates takes its count before the
// decision and compares it before each create: a target that failed
// meanwhile may be the breach, so the Promotions not created yet wait for
// the next decision, which sees it. On a busy apiserver a batch takes
// seconds; without this, a breach seen mid-batch would still start the
// rest of the batch.
type failureSignal struct {
	mu sync.Mutex
	n  map[types.NamespacedName]uint64
}

// note records that one of the rollout's target Promotions ended without
// success (the same Promotion may be noted again: any change counts).
func (f *failureSignal) note(rollout types.NamespacedName) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == nil {
		f.n = map[types.NamespacedName]uint64{}
	}
	f.n[rollout]++
}

// count returns the rollout's count of failures noted.
func (f *failureSignal) count(rollout types.NamespacedName) uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n[rollout]
}

// forget drops a deleted rollout.
func (f *failureSignal) forget(rollout types.NamespacedName) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.n, rollout)
}
