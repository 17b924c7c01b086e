package fleetrollouts

import (
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

// landedClaims remembers, per rollout, the last batch this process claimed
// whose creates all returned with the apiserver's answer. Such a claim
// holds nothing back any more: the Promotions it names either exist or
// will never be created (a batch stops at a failure, and a target whose
// Freight was not available waits for a later claim). A rollback taken
// right after a breach must not wait the claim window for creates that
// were dropped, since that wait is what the breach's first rollback
// Promotion would pay.
type landedClaims struct {
	mu sync.Mutex
	m  map[types.UID]fleetv1alpha1.Dispatch
}

// note records that the creates of claim d of the rollout uid all returned.
func (l *landedClaims) note(uid types.UID, d *fleetv1alpha1.Dispatch) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[types.UID]fleetv1alpha1.Dispatch{}
	}
	l.m[uid] = *d.DeepCopy()
}

// has reports whether d, as read back from the API server, is a claim
// noted as landed. The API server keeps claim times to the second.
func (l *landedClaims) has(uid types.UID, d *fleetv1alpha1.Dispatch) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	got, ok := l.m[uid]
	return ok && got.Controller == d.Controller && got.At.Unix() == d.At.Unix() && slices.Equal(got.Keys, d.Keys)
}

// forget drops a deleted rollout.
func (l *landedClaims) forget(uid types.UID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.m, uid)
}
