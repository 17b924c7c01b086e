package inventory

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
)

// Reader reads FleetStage targets through a controller-runtime client.Reader,
// normally the manager's cache. Each source is one List call; nothing is
// paginated, because a cache returns every object at once (and refuses
// continue tokens).
//
// A Reader reads only namespaces its NamespacePolicy allows (by default
// DefaultNamespacePolicy): the controller can read every Secret of the
// cluster, and a FleetStage author must not be able to make it copy another
// team's inventory into their Stages.
type Reader struct {
	client     client.Reader
	namespaces NamespacePolicy
	kinds      Kinds
}

// NewReader returns a Reader listing through c the DefaultKinds, allowing
// DefaultNamespacePolicy.
func NewReader(c client.Reader) *Reader {
	return &Reader{client: c, namespaces: DefaultNamespacePolicy(), kinds: DefaultKinds()}
}

// WithKinds sets the source kinds the Reader knows and returns it.
func (r *Reader) WithKinds(ks Kinds) *Reader {
	r.kinds = ks
	return r
}

// WithNamespaces sets the namespaces the Reader may read and returns it.
func (r *Reader) WithNamespaces(p NamespacePolicy) *Reader {
	r.namespaces = p
	return r
}

// Snapshot is what the sources of one FleetStage returned.
type Snapshot struct {
	// Targets are the candidates of every source, source by source, each
	// source sorted by ID.
	Targets []plan.Target
	// Skipped are objects that could not become targets.
	Skipped []SkippedObject
}

// Read returns the candidate targets of fs. Skipped objects are logged at
// V(1); callers wanting them use ReadSources.
func (r *Reader) Read(ctx context.Context, fs *fleetv1alpha1.FleetStage) ([]plan.Target, error) {
	snap, err := r.ReadSources(ctx, fs.Namespace, fs.Spec.Targets.Sources)
	if err != nil {
		return nil, err
	}
	logger := log.FromContext(ctx)
	for _, s := range snap.Skipped {
		logger.V(1).Info("Skipping inventory object", "source", s.Source, "namespace", s.Namespace,
			"name", s.Name, "reason", s.Reason)
	}
	return snap.Targets, nil
}

// ReadSources reads every source. namespace is the FleetStage's namespace,
// the default for KargoTarget and ClusterProfile sources. The first failing
// List is returned: planning on part of the inventory would make the missing
// targets look removed. So is a source reading a namespace the policy does
// not allow (ForbiddenNamespaceError), and a target holding a Kargo
// expression (UnsafeValueError).
func (r *Reader) ReadSources(ctx context.Context, namespace string, sources []fleetv1alpha1.TargetSource) (Snapshot, error) {
	var snap Snapshot
	for i := range sources {
		src := &sources[i]
		targets, skipped, err := r.readSource(ctx, namespace, src)
		if err != nil {
			return Snapshot{}, err
		}
		snap.Targets = append(snap.Targets, targets...)
		snap.Skipped = append(snap.Skipped, skipped...)
	}
	if err := CheckExpressions(snap.Targets); err != nil {
		return Snapshot{}, err
	}
	return snap, nil
}

// readSource reads one source through its kind's table entry.
func (r *Reader) readSource(ctx context.Context, namespace string, src *fleetv1alpha1.TargetSource) ([]plan.Target, []SkippedObject, error) {
	k, ok := r.kinds.Get(src.Kind)
	if !ok {
		return nil, nil, fmt.Errorf("error reading target source: unknown kind %q", src.Kind)
	}
	if !k.ReadsObjects() {
		return FromInline(src.Inline), nil, nil
	}
	ns := k.Namespace(namespace, src)
	if !r.namespaces.Allows(k, namespace, ns) {
		return nil, nil, NewForbiddenNamespaceError(k, ns, r.namespaces)
	}
	sel, err := sourceSelector(src.Selector, k.RequiredLabels)
	if err != nil {
		return nil, nil, fmt.Errorf("error reading %s source: %w", k.Name, err)
	}
	list := k.List.newList()
	if err := r.client.List(ctx, list, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, nil, listError(k, ns, err)
	}
	targets, skipped, err := k.List.targets(list, src.Annotations)
	if err != nil {
		return nil, nil, fmt.Errorf("error reading %s source: %w", k.Name, err)
	}
	return targets, skipped, nil
}

// listError explains a failed List. An optional kind the cluster does not
// serve is named as such: Kargo v1.11 has no Target kind, and ClusterProfiles
// come from the Cluster Inventory API, which a cluster may not have installed.
func listError(k *Kind, ns string, err error) error {
	if k.Optional && meta.IsNoMatchError(err) {
		return fmt.Errorf("error listing %s in namespace %q: the cluster does not serve the kind (install its CRD; "+
			"kargo-fleet starts watching it within a minute): %w", k.Description, ns, err)
	}
	return fmt.Errorf("error listing %s in namespace %q: %w", k.Description, ns, err)
}

// sourceSelector converts a source's selector and adds the kind's required
// labels. A nil selector selects everything.
func sourceSelector(sel *metav1.LabelSelector, required labels.Set) (labels.Selector, error) {
	out := labels.Everything()
	if sel != nil {
		s, err := metav1.LabelSelectorAsSelector(sel)
		if err != nil {
			return nil, fmt.Errorf("invalid selector: %w", err)
		}
		out = s
	}
	for _, key := range slices.Sorted(maps.Keys(required)) {
		req, err := labels.NewRequirement(key, selection.Equals, []string{required[key]})
		if err != nil {
			return nil, fmt.Errorf("invalid requirement %s=%s: %w", key, required[key], err)
		}
		out = out.Add(*req)
	}
	return out, nil
}
