package fleetrollouts

import (
	"maps"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kargo-fleet/kargo-fleet/internal/rollout"
)

// expectationTTL bounds how long a created Promotion may stay invisible in the
// cache before the controller stops assuming it exists. A create that failed
// ambiguously (a timeout) is thereby retried, but only after the cache had
// ample time to show it.
const expectationTTL = 2 * time.Minute

// expectations remembers target Promotions the controller created that its
// cache does not show yet, so that a reconcile in between does not create a
// second Promotion for the same target. They live in memory only: after a
// restart the cache is filled from the API server before the first reconcile,
// so every Promotion created before the restart is seen.
type expectations struct {
	mu sync.Mutex
	m  map[types.UID]map[string]time.Time
}

// expect records that a Promotion was created for a target of a rollout.
func (e *expectations) expect(uid types.UID, target string, now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.m == nil {
		e.m = map[types.UID]map[string]time.Time{}
	}
	if e.m[uid] == nil {
		e.m[uid] = map[string]time.Time{}
	}
	e.m[uid][target] = now
}

// forget drops one expectation (the create certainly failed).
func (e *expectations) forget(uid types.UID, target string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.m[uid], target)
}

// active returns the keys still expected at now, dropping those older than
// the TTL.
func (e *expectations) active(uid types.UID, now time.Time) map[string]bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make(map[string]bool, len(e.m[uid]))
	for key, at := range e.m[uid] {
		if now.Sub(at) > expectationTTL {
			delete(e.m[uid], key)
			continue
		}
		out[key] = true
	}
	return out
}

// isExpected reports whether a Promotion for key is expected and not older
// than the TTL at now.
func (e *expectations) isExpected(uid types.UID, key string, now time.Time) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	at, ok := e.m[uid][key]
	return ok && now.Sub(at) <= expectationTTL
}

// clear drops every expectation of a rollout.
func (e *expectations) clear(uid types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.m, uid)
}

// refusals remembers, per rollout and target, when Kargo first refused to
// create the target's Promotion: the progress deadline of a target that
// never gets a Promotion runs from there. In memory only: after a restart
// the deadline starts again from the next refusal.
type refusals struct {
	mu sync.Mutex
	m  map[types.UID]map[string]rollout.Refusal
}

// note records a refusal of the target's Promotion, keeping the first time.
func (r *refusals) note(uid types.UID, target string, now time.Time, message string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[types.UID]map[string]rollout.Refusal{}
	}
	if r.m[uid] == nil {
		r.m[uid] = map[string]rollout.Refusal{}
	}
	if _, ok := r.m[uid][target]; !ok {
		r.m[uid][target] = rollout.Refusal{Since: now, Message: message}
	}
}

// all returns the first refusal of each target of a rollout that had one.
func (r *refusals) all(uid types.UID) map[string]rollout.Refusal {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]rollout.Refusal, len(r.m[uid]))
	for target, f := range r.m[uid] {
		out[target] = f
	}
	return out
}

// clear drops a rollout's refusals.
func (r *refusals) clear(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, uid)
}

// takenNames remembers, per rollout and target, since when the target's
// Stage name has been seen held by a Stage the FleetStage did not record.
// In memory only: after a restart the deadline starts again.
type takenNames struct {
	mu sync.Mutex
	m  map[types.UID]map[string]time.Time
}

// observe keeps the first time of every target that is taken now and has
// no Promotion, and forgets the others.
func (n *takenNames) observe(uid types.UID, targets map[string]rollout.TargetObservation, now time.Time) {
	n.mu.Lock()
	defer n.mu.Unlock()
	prev := n.m[uid]
	var cur map[string]time.Time
	for id, t := range targets {
		if !t.StageUnrecorded || t.Promotion != nil {
			continue
		}
		if cur == nil {
			cur = map[string]time.Time{}
		}
		since, ok := prev[id]
		if !ok {
			since = now
		}
		cur[id] = since
	}
	if cur == nil {
		delete(n.m, uid)
		return
	}
	if n.m == nil {
		n.m = map[types.UID]map[string]time.Time{}
	}
	n.m[uid] = cur
}

// all returns since when each taken target of a rollout has been taken.
func (n *takenNames) all(uid types.UID) map[string]time.Time {
	n.mu.Lock()
	defer n.mu.Unlock()
	return maps.Clone(n.m[uid])
}

// clear drops a rollout's taken names.
func (n *takenNames) clear(uid types.UID) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.m, uid)
}
