package fleetrollouts

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
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
func (e *expectations) expect(rollout types.UID, target string, now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.m == nil {
		e.m = map[types.UID]map[string]time.Time{}
	}
	if e.m[rollout] == nil {
		e.m[rollout] = map[string]time.Time{}
	}
	e.m[rollout][target] = now
}

// forget drops one expectation (the create certainly failed).
func (e *expectations) forget(rollout types.UID, target string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.m[rollout], target)
}

// pending returns the targets still expected, dropping those the cache now
// shows (observed) and those older than the TTL.
func (e *expectations) pending(rollout types.UID, observed func(target string) bool, now time.Time) map[string]bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[string]bool{}
	for target, at := range e.m[rollout] {
		if observed(target) || now.Sub(at) > expectationTTL {
			delete(e.m[rollout], target)
			continue
		}
		out[target] = true
	}
	return out
}

// isExpected reports whether a Promotion for key is expected and not older
// than the TTL at now.
func (e *expectations) isExpected(rollout types.UID, key string, now time.Time) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	at, ok := e.m[rollout][key]
	return ok && now.Sub(at) <= expectationTTL
}

// clear drops every expectation of a rollout.
func (e *expectations) clear(rollout types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.m, rollout)
}

// refusals remembers, per rollout and target, when Kargo first refused to
// create the target's Promotion: the progress deadline of a target that
// never gets a Promotion runs from there. In memory only: after a restart
// the deadline starts again from the next refusal.
type refusals struct {
	mu sync.Mutex
	m  map[types.UID]map[string]refusal
}

type refusal struct {
	since   time.Time
	message string
}

// note records a refusal of the target's Promotion, keeping the first time.
func (r *refusals) note(rollout types.UID, target string, now time.Time, message string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[types.UID]map[string]refusal{}
	}
	if r.m[rollout] == nil {
		r.m[rollout] = map[string]refusal{}
	}
	if _, ok := r.m[rollout][target]; !ok {
		r.m[rollout][target] = refusal{since: now, message: message}
	}
}

// get returns the first refusal of the target's Promotion, if any.
func (r *refusals) get(rollout types.UID, target string) (refusal, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f, ok := r.m[rollout][target]
	return f, ok
}

// clear drops a rollout's refusals.
func (r *refusals) clear(rollout types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, rollout)
}
