package inventory

import (
	"maps"

	"k8s.io/apimachinery/pkg/labels"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
)

// Projection is everything of one inventory object that a source selects on
// or builds a target from: its labels, the target's name, the params the
// object's own data sets, its annotations (a source may copy some into
// params) and, for an object that cannot become a target, why. Nothing else
// of the object reaches a plan: not an Argo CD cluster Secret's credentials,
// not its resourceVersion or managedFields. The Reader builds its targets
// from projections (Projection.Target), and the FleetStage controller
// compares the projections of an object before and after an update with the
// same functions, so an update that keeps them equal (a token rotation)
// re-plans nothing.
//
// A Projection may share its maps with the object it was made from (an
// informer's cache): it is read only.
type Projection struct {
	// Source is the inventory kind.
	Source fleetv1alpha1.TargetSourceKind
	// Namespace and Object identify the object.
	Namespace, Object string
	// Name is the target's name.
	Name string
	// Labels are the object's labels: sources select on them, and the
	// target carries them.
	Labels map[string]string
	// Params are the params the object's own data sets.
	Params map[string]string
	// Annotations are the object's annotations, candidates for the params
	// of a source that lists them. Reserved ones (IsReservedAnnotation) are
	// never copied and never compared.
	Annotations map[string]string
	// Skip says why the object cannot become a target; empty when it can.
	Skip string
}

// Target returns the target p makes for a source copying the annotations
// keys into params. The target owns its maps.
func (p *Projection) Target(annotations []string) plan.Target {
	return newTarget(p.Source, p.Name, p.Labels, withAnnotations(maps.Clone(p.Params), p.Annotations, annotations))
}

// Skipped returns p as a skipped object.
func (p *Projection) Skipped() SkippedObject {
	return SkippedObject{Source: p.Source, Namespace: p.Namespace, Name: p.Object, Reason: p.Skip}
}

// Equal reports whether p and q are the same for every source: same
// labels, target name, params, skip reason and annotations, reserved
// annotations aside.
func (p *Projection) Equal(q *Projection) bool {
	return p.Source == q.Source && p.Namespace == q.Namespace && p.Object == q.Object && p.Name == q.Name &&
		p.Skip == q.Skip && maps.Equal(p.Labels, q.Labels) && maps.Equal(p.Params, q.Params) &&
		annotationsEqual(p.Annotations, q.Annotations)
}

// annotationsEqual reports whether a and b hold the same annotations,
// reserved ones aside: kubectl's last-applied copy of a Secret changes with
// every credential applied.
func annotationsEqual(a, b map[string]string) bool {
	n := 0
	for k, v := range a {
		if IsReservedAnnotation(k) {
			continue
		}
		if w, ok := b[k]; !ok || w != v {
			return false
		}
		n++
	}
	for k := range b {
		if !IsReservedAnnotation(k) {
			n--
		}
	}
	return n == 0
}

// SourceChanged reports whether replacing the object projected as before
// by the one projected as after (nil for an object that did not, or no
// longer does, exist) changes what src reads: the object enters or leaves the source's
// selection, or, selected before and after, makes another target (or
// becomes one, or stops being one). k is src's kind. An invalid selector
// counts as a change: the reconcile reports it.
func (k *Kind) SourceChanged(src *fleetv1alpha1.TargetSource, before, after *Projection) bool {
	sel, err := sourceSelector(src.Selector, k.RequiredLabels)
	if err != nil {
		return true
	}
	wasSelected := before != nil && sel.Matches(labels.Set(before.Labels))
	isSelected := after != nil && sel.Matches(labels.Set(after.Labels))
	switch {
	case !wasSelected && !isSelected:
		return false
	case wasSelected != isSelected:
		return true
	case before.Skip != "" || after.Skip != "":
		return (before.Skip == "") != (after.Skip == "")
	}
	return !targetsEqual(before.Target(src.Annotations), after.Target(src.Annotations))
}

// targetsEqual reports whether two inventory targets are the same.
func targetsEqual(a, b plan.Target) bool {
	return a.ID == b.ID && a.Name == b.Name && a.Source == b.Source && a.Shard == b.Shard &&
		maps.Equal(a.Labels, b.Labels) && maps.Equal(a.Params, b.Params)
}

// targetsOf turns projections into targets for a source copying the
// annotations keys, sorted by ID, and the objects that cannot become one.
func targetsOf(ps []Projection, annotations []string) ([]plan.Target, []SkippedObject) {
	targets := make([]plan.Target, 0, len(ps))
	var skipped []SkippedObject
	for i := range ps {
		if ps[i].Skip != "" {
			skipped = append(skipped, ps[i].Skipped())
			continue
		}
		targets = append(targets, ps[i].Target(annotations))
	}
	return sortTargets(targets), skipped
}
