package inventory

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
)

// The controller lists and watches the optional inventory kinds cluster-wide
// (make generate puts these into its ClusterRole). Argo CD cluster Secrets
// are read through a Role per inventory namespace, which the chart grants.
//
// +kubebuilder:rbac:groups=kargo.akuity.io,resources=targets,verbs=get;list;watch
// +kubebuilder:rbac:groups=multicluster.x-k8s.io,resources=clusterprofiles,verbs=get;list;watch

// Kind is everything kargo-fleet knows about one kind of inventory source:
// which objects it reads, where they live, who may read them, how the
// controller watches them and how they become targets. The Reader, the
// admission webhook's checks, the FleetStage controller's watches, the
// manager's scheme and cache all go through a Kinds table, so a new kind is
// a value of the API's TargetSourceKind enum plus one entry in
// DefaultKinds.
type Kind struct {
	// Name is the kind as spec.targets.sources[].kind spells it.
	Name fleetv1alpha1.TargetSourceKind
	// Description names the kind's objects in messages, in the plural
	// ("Argo CD cluster Secrets").
	Description string

	// GVK is the kind of the objects read. It is empty for a kind whose
	// targets are written in the source itself (Inline), which reads
	// nothing: every other field below is then unused.
	GVK schema.GroupVersionKind
	// Resource is the objects' API resource (plural, lower case): what the
	// admission webhook asks a SubjectAccessReview about, so a FleetStage's
	// author may only name inventory they may list themselves.
	Resource string
	// Object is an empty object of the kind, for the watches and the cache.
	Object client.Object
	// List lists the objects and projects each (ListOf).
	List Lister
	// AddToScheme registers the objects' Go types; nil when client-go's
	// scheme knows them.
	AddToScheme func(*runtime.Scheme) error

	// DefaultNamespace is read when a source names no namespace; empty means
	// the FleetStage's own namespace.
	DefaultNamespace string
	// ListedNamespacesOnly restricts reading to the namespaces the operator
	// lists (--inventory-namespaces), never a FleetStage's own just because
	// it is its own. The manager caches the kind only in those namespaces,
	// and a change of one object concerns every FleetStage, since any
	// Project may read the listed namespaces.
	ListedNamespacesOnly bool
	// RequiredLabels are labels every object read carries: the reader, the
	// watch and the cache select only such objects.
	RequiredLabels labels.Set
	// Optional says that not every cluster serves the kind: a failed List is
	// explained as a missing CRD, and the controller watches the kind only
	// once discovery shows it (a watch on a kind the cluster lacks would stop
	// the manager).
	Optional bool
}

// ReadsObjects reports whether the kind reads objects from the cluster.
// Inline sources read none.
func (k *Kind) ReadsObjects() bool { return !k.GVK.Empty() }

// Namespace returns the namespace a source of the kind reads: the source's
// namespace, else the kind's default, else the FleetStage's namespace.
// Kinds that read no objects read no namespace ("").
func (k *Kind) Namespace(fleetNamespace string, src *fleetv1alpha1.TargetSource) string {
	switch {
	case !k.ReadsObjects():
		return ""
	case src.Namespace != "":
		return src.Namespace
	case k.DefaultNamespace != "":
		return k.DefaultNamespace
	default:
		return fleetNamespace
	}
}

// Lister lists one kind's objects into a fresh list and projects each
// (Projection), from which the Reader builds targets and the FleetStage
// controller tells which updates concern a FleetStage. ListOf builds one.
type Lister struct {
	newList func() client.ObjectList
	project func(client.Object) (Projection, bool)
}

// ListOf returns a Lister listing into lists made by newList, whose items
// (of pointer type O) project projects.
func ListOf[L client.ObjectList, O client.Object](newList func() L, project func(O) Projection) Lister {
	return Lister{
		newList: func() client.ObjectList { return newList() },
		project: func(o client.Object) (Projection, bool) {
			typed, ok := o.(O)
			if !ok {
				return Projection{}, false
			}
			return project(typed), true
		},
	}
}

// Project returns the projection of an object of the kind; false when o is
// of another kind.
func (k *Kind) Project(o client.Object) (Projection, bool) {
	if k.List.project == nil {
		return Projection{}, false
	}
	return k.List.project(o)
}

// targets turns a listed list into targets for a source copying the
// annotations keys into params, and the objects that cannot become one.
func (l Lister) targets(list client.ObjectList, annotations []string) ([]plan.Target, []SkippedObject, error) {
	var ps []Projection
	err := meta.EachListItem(list, func(o runtime.Object) error {
		obj, ok := o.(client.Object)
		if !ok {
			return fmt.Errorf("list item %T is not an object", o)
		}
		p, ok := l.project(obj)
		if !ok {
			return fmt.Errorf("list item %T is not of the kind listed", o)
		}
		ps = append(ps, p)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	targets, skipped := targetsOf(ps, annotations)
	return targets, skipped, nil
}

// Kinds is a table of inventory source kinds.
type Kinds []Kind

// DefaultKinds returns the kinds kargo-fleet reads: Argo CD cluster
// Secrets, Kargo Targets, SIG-Multicluster ClusterProfiles and inline
// targets. Each call returns a new table, so no caller can change another's.
func DefaultKinds() Kinds {
	return Kinds{
		{
			Name:             fleetv1alpha1.ArgoCDClusterSource,
			Description:      "Argo CD cluster Secrets",
			GVK:              corev1.SchemeGroupVersion.WithKind("Secret"),
			Resource:         "secrets",
			Object:           &corev1.Secret{},
			List:             ListOf(func() *corev1.SecretList { return &corev1.SecretList{} }, ProjectArgoCDSecret),
			DefaultNamespace: fleetv1alpha1.DefaultArgoCDNamespace,
			// Argo CD honours cluster Secrets only in its own namespace, and
			// the controller may read Secrets only in the listed ones.
			ListedNamespacesOnly: true,
			RequiredLabels:       labels.Set{ArgoCDSecretTypeLabel: ArgoCDSecretTypeCluster},
		},
		{
			Name:        fleetv1alpha1.KargoTargetSource,
			Description: "Kargo Targets",
			GVK:         kargo.GroupVersion.WithKind("Target"),
			Resource:    "targets",
			Object:      &kargo.Target{},
			List:        ListOf(func() *kargo.TargetList { return &kargo.TargetList{} }, ProjectKargoTarget),
			AddToScheme: kargo.AddToScheme,
			// Kargo v1.11 has no Target kind.
			Optional: true,
		},
		{
			Name:        fleetv1alpha1.ClusterProfileSource,
			Description: "ClusterProfiles",
			GVK:         ClusterProfileGroupVersion.WithKind("ClusterProfile"),
			Resource:    "clusterprofiles",
			Object:      &ClusterProfile{},
			List:        ListOf(func() *ClusterProfileList { return &ClusterProfileList{} }, ProjectClusterProfile),
			AddToScheme: addClusterProfileToScheme,
			// The Cluster Inventory API is installed separately.
			Optional: true,
		},
		{
			Name:        fleetv1alpha1.InlineSource,
			Description: "inline targets",
		},
	}
}

// Get returns the kind named name.
func (ks Kinds) Get(name fleetv1alpha1.TargetSourceKind) (*Kind, bool) {
	for i := range ks {
		if ks[i].Name == name {
			return &ks[i], true
		}
	}
	return nil, false
}

// Names returns the kinds' names in table order.
func (ks Kinds) Names() []fleetv1alpha1.TargetSourceKind {
	out := make([]fleetv1alpha1.TargetSourceKind, 0, len(ks))
	for i := range ks {
		out = append(out, ks[i].Name)
	}
	return out
}

// AddToScheme registers the Go types of every kind with s.
func (ks Kinds) AddToScheme(s *runtime.Scheme) error {
	for i := range ks {
		if ks[i].AddToScheme == nil {
			continue
		}
		if err := ks[i].AddToScheme(s); err != nil {
			return fmt.Errorf("error registering the %s source kind: %w", ks[i].Name, err)
		}
	}
	return nil
}

// Validate returns an error for every source of a kind the table does not
// hold; fldPath is spec.targets.sources. The planner checks the rest of a
// source, which does not depend on the table.
func (ks Kinds) Validate(sources []fleetv1alpha1.TargetSource, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i := range sources {
		kind := sources[i].Kind
		if kind == "" {
			continue // plan.Validate reports it as required
		}
		if _, ok := ks.Get(kind); !ok {
			errs = append(errs, field.NotSupported(fldPath.Index(i).Child("kind"), kind, ks.Names()))
		}
	}
	return errs
}

// AddToScheme registers the Go types of every default kind with a scheme:
// the controller's scheme needs them to read its sources.
func AddToScheme(s *runtime.Scheme) error { return DefaultKinds().AddToScheme(s) }
