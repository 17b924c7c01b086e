package fleetrollouts

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/personrights"
	"github.com/kargo-fleet/kargo-fleet/internal/rollout"
)

// Reasons of the Events about Kargo UI gestures.
const (
	// GestureAppliedReason: an Abort in the Kargo UI paused or aborted the
	// rollout.
	GestureAppliedReason = "KargoUIGesture"
	// GestureRefusedReason: an Abort in the Kargo UI stopped one Promotion
	// but not the fleet, as its person lacks the fleet's rights.
	GestureRefusedReason = "KargoUIGestureRefused"
)

// WithGestures makes the reconciler carry out the fleet actions a person's
// Abort in the Kargo UI means (docs/kargo-ui.md, "Fleet actions from the
// Kargo UI"), checking the person's rights with rights; self is the actor
// kargo-fleet's own abort requests carry ("kubernetes:<controller user>").
// Without it, aborts stop single Promotions only.
func (r *FleetRolloutReconciler) WithGestures(self string, rights *personrights.Checker) *FleetRolloutReconciler {
	r.self, r.rights = self, rights
	return r
}

// refusedGestures remembers the gestures already found refused, so each is
// reviewed and reported once per process.
type refusedGestures struct {
	mu   sync.Mutex
	seen map[types.UID]map[string]bool
}

func (g *refusedGestures) note(uid types.UID, promotion string) (first bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.seen == nil {
		g.seen = map[types.UID]map[string]bool{}
	}
	if g.seen[uid] == nil {
		g.seen[uid] = map[string]bool{}
	}
	first = !g.seen[uid][promotion]
	g.seen[uid][promotion] = true
	return first
}

func (g *refusedGestures) has(uid types.UID, promotion string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.seen[uid][promotion]
}

// applyGestures carries out the first abort gesture on the rollout whose
// person holds the rights: the rollout's intent becomes Pause or Abort and
// the person is recorded as who set it, in one write. It reports whether it
// wrote. The admission guard refuses the gestures of people without the
// rights before Kargo acts; one that got through (the guard off, or down:
// its abort webhook ignores failures so Kargo's own Abort keeps working)
// stops its Promotion only, and is reported.
func (r *FleetRolloutReconciler) applyGestures(ctx context.Context, s *scope, obs *rollout.Observed) (bool, error) {
	ro, fs := s.ro, s.fs
	if r.rights == nil || ro.Status.Phase.IsFinal() || len(obs.Aborted) == 0 {
		return false, nil
	}
	for _, g := range rollout.AbortGestures(ro, obs.Aborted, r.self) {
		if r.gestures.has(ro.UID, g.Promotion) {
			continue
		}
		person := personrights.Person{Actor: g.Actor}
		v := personrights.Verdict{Allowed: personrights.CheckedAtAdmission(g.Actor)}
		if !v.Allowed {
			var err error
			if v, err = r.rights.Check(ctx, person, ro.Namespace, g.Reading.Rights(ro.Namespace, fs)); err != nil {
				return false, err
			}
		}
		if !v.Allowed {
			if r.gestures.note(ro.UID, g.Promotion) {
				r.event(ro, corev1.EventTypeWarning, GestureRefusedReason, "Abort of Promotion %s stopped that Promotion only, "+
					"not the fleet: it would %s FleetRollout %s, and %s", g.Promotion, g.Reading.Action.Verb(), ro.Name,
					v.Describe(person.Name()))
			}
			continue
		}
		intent := fleetv1alpha1.IntentPause
		if g.Reading.Action == rollout.ActionAbort {
			intent = fleetv1alpha1.IntentAbort
		}
		patched := ro.DeepCopy()
		patched.Spec.Intent = intent
		if patched.Annotations == nil {
			patched.Annotations = map[string]string{}
		}
		patched.Annotations[fleetv1alpha1.IntentActorAnnotation] = person.Name()
		if err := r.client.Patch(ctx, patched, client.MergeFromWithOptions(ro, client.MergeFromWithOptimisticLock{})); err != nil {
			return false, fmt.Errorf("error setting intent %s on FleetRollout %q for the abort of Promotion %s: %w",
				intent, ro.Name, g.Promotion, err)
		}
		r.event(ro, corev1.EventTypeNormal, GestureAppliedReason, "Abort of Promotion %s by %s in the Kargo UI: %s FleetRollout %s",
			g.Promotion, person.Name(), g.Reading.Action.Verb(), ro.Name)
		s.ro = patched
		return true, nil
	}
	return false, nil
}
