package versions

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/drift"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/kargoevents"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
	"github.com/kargo-fleet/kargo-fleet/internal/provenance"
	"github.com/kargo-fleet/kargo-fleet/internal/strutil"
)

// Event reasons of drift detection, on the FleetStage.
const (
	// TargetDriftedReason: a target started running Freight the fleet does
	// not intend (Warning).
	TargetDriftedReason = "TargetDrifted"
	// DriftRevertedReason: the intended Freight is being promoted back to a
	// drifted target (Normal).
	DriftRevertedReason = "DriftReverted"
	// DriftRevertRefusedReason: the API server refused the revert
	// Promotion at admission (a FreightPolicy keeps the intended Freight off
	// the target, Kargo's own webhook, ...): it is not retried for this
	// drift.
	DriftRevertRefusedReason = "DriftRevertRefused"
	// DriftRevertWaitingReason: drifted targets wait to be reverted
	// (Normal).
	DriftRevertWaitingReason = "DriftRevertWaiting"
)

// maxDriftEvents bounds the per-target Events of one reconcile; the rest
// are summed up in one more.
const maxDriftEvents = 10

// clearedRetention is how long the end of a drift is remembered: a drift
// that ends after its revert and comes back within it is reverted again.
const clearedRetention = 24 * time.Hour

// driftMemory remembers, per FleetStage, the drifts seen at the last
// reconcile (to announce only new ones), when drifts ended and the reverts
// made (the cache may not show a revert Promotion just created).
type driftMemory struct {
	mu sync.Mutex
	by map[types.NamespacedName]*driftState
}

type driftState struct {
	seen     map[string]bool
	cleared  map[string]time.Time
	attempts map[string]drift.Attempt
}

// observe records the current drifts and returns the new ones and a copy
// of the drift ends and reverts known. With partial set, what the drifts
// say is not all there is (the Applications could not be read): a drift
// seen before and missing now has not ended.
func (m *driftMemory) observe(key types.NamespacedName, drifts []drift.Drift, now time.Time, partial bool) (
	[]drift.Drift, map[string]time.Time, map[string]drift.Attempt) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.by == nil {
		m.by = map[types.NamespacedName]*driftState{}
	}
	s := m.by[key]
	if s == nil {
		s = &driftState{seen: map[string]bool{}, cleared: map[string]time.Time{}, attempts: map[string]drift.Attempt{}}
		m.by[key] = s
	}
	fresh := drift.Newly(s.seen, drifts)
	current := make(map[string]bool, len(drifts))
	for _, d := range drifts {
		current[d.Key()] = true
	}
	for k := range s.seen {
		switch {
		case current[k]:
		case partial:
			current[k] = true
		default:
			s.cleared[k] = now
		}
	}
	for k, at := range s.cleared {
		if now.Sub(at) > clearedRetention {
			delete(s.cleared, k)
		}
	}
	for k, a := range s.attempts {
		if now.Sub(a.Created) > clearedRetention {
			delete(s.attempts, k)
		}
	}
	s.seen = current
	cleared := make(map[string]time.Time, len(s.cleared))
	for k, v := range s.cleared {
		cleared[k] = v
	}
	attempts := make(map[string]drift.Attempt, len(s.attempts))
	for k, v := range s.attempts {
		attempts[k] = v
	}
	return fresh, cleared, attempts
}

// attempted records a revert made.
func (m *driftMemory) attempted(key types.NamespacedName, driftKey string, at time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s := m.by[key]; s != nil {
		s.attempts[driftKey] = drift.Attempt{Created: at}
	}
}

// forget drops a deleted FleetStage.
func (m *driftMemory) forget(key types.NamespacedName) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.by, key)
}

// announce emits a Warning Event per newly drifted target, at most
// maxDriftEvents, and one summing up the rest.
func (r *Reconciler) announce(fs *fleetv1alpha1.FleetStage, fresh []drift.Drift) {
	// Application changes have Events of their own (ApplicationChanged).
	fresh = slices.DeleteFunc(slices.Clone(fresh), func(d drift.Drift) bool { return d.Application != "" })
	for _, d := range fresh[:min(len(fresh), maxDriftEvents)] {
		r.eventAbout(fs, kargoevents.Stage(fs.Namespace, d.Stage), corev1.EventTypeWarning, TargetDriftedReason,
			"Target %s (Stage %s) runs Freight %s, not the intended %s", d.Target, d.Stage, d.Freight, d.Intended)
	}
	if rest := len(fresh) - maxDriftEvents; rest > 0 {
		r.event(fs, corev1.EventTypeWarning, TargetDriftedReason, "%d more targets drifted from Freight %s (status.drift counts them)",
			rest, fresh[0].Intended)
	}
}

func (r *Reconciler) event(fs *fleetv1alpha1.FleetStage, typ, reason, format string, args ...any) {
	r.eventAbout(fs, nil, typ, reason, format, args...)
}

// eventAbout records an Event about fs that the Kargo UI's Events page
// also shows on the drifted target's Stage (kargoevents.Recorder).
func (r *Reconciler) eventAbout(fs *fleetv1alpha1.FleetStage, stage runtime.Object, typ, reason, format string, args ...any) {
	if r.recorder == nil {
		return
	}
	r.recorder.Eventf(fs, stage, typ, reason, "Drift", strutil.Ellipsis(fmt.Sprintf(format, args...), 1024))
}

// revert promotes the intended Freight back to drifted targets under
// spec.policy.drift Revert; it returns when to look again if reverts wait
// for a change window.
func (r *Reconciler) revert(ctx context.Context, fs *fleetv1alpha1.FleetStage, rolloutOpen bool, drifts []drift.Drift,
	cleared map[string]time.Time, known map[string]drift.Attempt) (time.Duration, error) {
	if fs.Spec.Policy.Drift != fleetv1alpha1.DriftRevert || len(drifts) == 0 {
		return 0, nil
	}
	now := r.clock.Now()
	attempts, inFlight, err := r.revertAttempts(ctx, fs, known)
	if err != nil {
		return 0, err
	}
	allowed, next := r.windowsAllow(fs, now)
	d := drift.PlanReverts(drift.RevertInput{Drifts: drifts, Attempts: attempts, Cleared: cleared, InFlight: inFlight,
		MaxInFlight: drift.MaxInFlight(&fs.Spec.Policy), RolloutOpen: rolloutOpen, WindowsAllow: allowed})
	key := client.ObjectKeyFromObject(fs)
	for _, dr := range d.Revert {
		annotations, err := r.marker.Annotate(ctx, provenance.Identity{Namespace: fs.Namespace, Stage: dr.Stage,
			Freight: dr.Intended, Decision: provenance.RevertDecision(dr.Key())}, map[string]string{kargo.RollbackAnnotation: "true"})
		if err != nil {
			return 0, err
		}
		p := kargo.NewPromotion(fs.Namespace, dr.Stage, dr.Intended, map[string]string{
			fleetv1alpha1.FleetStageLabel: fs.Name,
			fleetv1alpha1.RevertLabel:     dr.Key(),
		}, annotations)
		if err := r.client.Create(ctx, p); err != nil {
			if !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) {
				return 0, fmt.Errorf("error promoting Freight %s back to drifted target Stage %q: %w", dr.Intended, dr.Stage, err)
			}
			// Refused at admission: asking again would be refused again,
			// and must not keep the other drifted targets from their
			// reverts. Once per drift, like a revert.
			r.drift.attempted(key, dr.Key(), now)
			r.eventAbout(fs, kargoevents.Stage(fs.Namespace, dr.Stage), corev1.EventTypeWarning, DriftRevertRefusedReason,
				"Not promoting Freight %s back to drifted target %s (Stage %s): %s", dr.Intended, dr.Target, dr.Stage,
				strutil.Ellipsis(err.Error(), 512))
			continue
		}
		r.drift.attempted(key, dr.Key(), now)
		log.FromContext(ctx).Info("Reverting drifted target", "target", dr.Target, "freight", dr.Freight, "intended", dr.Intended)
		if dr.Application != "" {
			r.eventAbout(fs, kargoevents.Stage(fs.Namespace, dr.Stage), corev1.EventTypeNormal, DriftRevertedReason,
				"Promoting Freight %s again to target %s (Stage %s): its Argo CD Application changed outside the fleet",
				dr.Intended, dr.Target, dr.Stage)
			continue
		}
		r.eventAbout(fs, kargoevents.Stage(fs.Namespace, dr.Stage), corev1.EventTypeNormal, DriftRevertedReason,
			"Promoting Freight %s back to drifted target %s (Stage %s), which runs %s", dr.Intended, dr.Target, dr.Stage, dr.Freight)
	}
	if d.Waiting == "" {
		return 0, nil
	}
	log.FromContext(ctx).V(2).Info("Drifted targets wait to be reverted", "reason", d.Waiting)
	if !allowed && !next.IsZero() {
		return max(next.Sub(now), time.Second), nil
	}
	return 0, nil
}

// revertAttempts returns the newest revert Promotion per drift key, merged
// with the ones this process made, and how many are still running.
func (r *Reconciler) revertAttempts(ctx context.Context, fs *fleetv1alpha1.FleetStage, known map[string]drift.Attempt) (
	map[string]drift.Attempt, int, error) {
	list := &kargo.PromotionList{}
	if err := r.client.List(ctx, list, client.InNamespace(fs.Namespace), client.HasLabels{fleetv1alpha1.RevertLabel},
		client.MatchingLabels{fleetv1alpha1.FleetStageLabel: fs.Name}); err != nil {
		return nil, 0, fmt.Errorf("error listing the drift reverts of FleetStage %q: %w", fs.Name, err)
	}
	attempts := known
	inFlight := 0
	for i := range list.Items {
		p := &list.Items[i]
		k := p.Labels[fleetv1alpha1.RevertLabel]
		if a, ok := attempts[k]; !ok || p.CreationTimestamp.After(a.Created) {
			attempts[k] = drift.Attempt{Created: p.CreationTimestamp.Time}
		}
		if !p.Status.Phase.IsTerminal() {
			inFlight++
		}
	}
	return attempts, inFlight, nil
}

// windowsAllow reports whether the change windows let a revert start now,
// and otherwise when they next do (zero when never found). Target Stages do
// not carry their targets' labels, so every window applies to every
// revert, whatever its selector: a deny window for some targets holds all
// reverts back.
func (r *Reconciler) windowsAllow(fs *fleetv1alpha1.FleetStage, now time.Time) (bool, time.Time) {
	if len(fs.Spec.Policy.Windows) == 0 {
		return true, time.Time{}
	}
	policy := fleetv1alpha1.FleetPolicy{Windows: make([]fleetv1alpha1.ChangeWindow, len(fs.Spec.Policy.Windows))}
	for i := range fs.Spec.Policy.Windows {
		w := fs.Spec.Policy.Windows[i].DeepCopy()
		w.Selector = nil
		policy.Windows[i] = *w
	}
	compiled, errs := plan.CompilePolicy(&policy, field.NewPath("spec", "policy"))
	if len(errs) > 0 {
		return false, time.Time{}
	}
	next, ok := compiled.NextAllowed(&plan.Target{}, now)
	if !ok {
		return false, time.Time{}
	}
	return !next.After(now), next
}
