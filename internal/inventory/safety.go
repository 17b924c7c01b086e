package inventory

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
	"github.com/kargo-fleet/kargo-fleet/internal/strutil"
)

// ReservedAnnotationPrefix marks annotations that are never copied into a
// target's params, even when a source lists them: kubectl keeps a copy of
// the whole applied object in kubectl.kubernetes.io/last-applied-configuration,
// Secret data included.
const ReservedAnnotationPrefix = "kubectl.kubernetes.io/"

// ExpressionMarker opens a Kargo expression. Target data reaches Stages as
// variables, whose values Kargo evaluates: an inventory value holding it
// would run an expression (${{ secret('...') }}) with the Project's rights.
const ExpressionMarker = "${{"

// IsReservedAnnotation reports whether an annotation key may never be copied
// from an inventory object.
func IsReservedAnnotation(key string) bool {
	return strings.HasPrefix(key, ReservedAnnotationPrefix)
}

// DefaultNamespaces are the namespaces, besides a FleetStage's own, that
// inventory may be read from when the operator does not say.
var DefaultNamespaces = []string{fleetv1alpha1.DefaultArgoCDNamespace}

// NamespacePolicy says which namespaces a FleetStage's sources may read
// inventory from: the FleetStage's own namespace, always, and the ones the
// operator lists (the controller's --inventory-namespaces flag). The zero
// value allows only the FleetStage's own namespace.
type NamespacePolicy struct {
	allowed map[string]bool
}

// NewNamespacePolicy returns a policy allowing the given namespaces besides
// each FleetStage's own. Empty names are ignored.
func NewNamespacePolicy(namespaces []string) NamespacePolicy {
	p := NamespacePolicy{allowed: map[string]bool{}}
	for _, ns := range namespaces {
		if ns = strings.TrimSpace(ns); ns != "" {
			p.allowed[ns] = true
		}
	}
	return p
}

// DefaultNamespacePolicy allows DefaultNamespaces and each FleetStage's own
// namespace.
func DefaultNamespacePolicy() NamespacePolicy { return NewNamespacePolicy(DefaultNamespaces) }

// Allows reports whether a source of kind k of a FleetStage in
// fleetNamespace may read inventory from namespace. A kind read from listed
// namespaces only (Argo CD cluster Secrets) is never read from the
// FleetStage's own just because it is its own: Argo CD honours cluster
// Secrets only in its own namespace, and the controller is granted Secret
// reads (a Role each) only in the listed ones.
func (p NamespacePolicy) Allows(k *Kind, fleetNamespace, namespace string) bool {
	if k.ListedNamespacesOnly {
		return p.allowed[namespace]
	}
	return namespace == fleetNamespace || p.allowed[namespace]
}

// Namespaces returns the listed namespaces, sorted.
func (p NamespacePolicy) Namespaces() []string {
	return slices.Sorted(maps.Keys(p.allowed))
}

// ForbiddenNamespaceError refuses a source reading from a namespace the
// operator did not allow.
type ForbiddenNamespaceError struct {
	// Source is the source's kind.
	Source fleetv1alpha1.TargetSourceKind
	// Namespace is the namespace the source would read.
	Namespace string
	// Allowed are the namespaces the operator lists.
	Allowed []string
	// ListedOnly says the kind is read from listed namespaces only; Objects
	// then names its objects (Kind.Description).
	ListedOnly bool
	Objects    string
}

// NewForbiddenNamespaceError returns the error refusing a source of kind k
// reading namespace under policy p.
func NewForbiddenNamespaceError(k *Kind, namespace string, p NamespacePolicy) *ForbiddenNamespaceError {
	return &ForbiddenNamespaceError{Source: k.Name, Namespace: namespace, Allowed: p.Namespaces(),
		ListedOnly: k.ListedNamespacesOnly, Objects: k.Description}
}

// Error implements error.
func (e *ForbiddenNamespaceError) Error() string {
	if e.ListedOnly {
		return fmt.Sprintf("%s source may not read namespace %q: %s are read only from %s "+
			"(controller flag --inventory-namespaces)", e.Source, e.Namespace, e.Objects, quoteList(e.Allowed))
	}
	return fmt.Sprintf("%s source may not read namespace %q: inventory is read only from the FleetStage's own "+
		"namespace and %s (controller flag --inventory-namespaces)", e.Source, e.Namespace, quoteList(e.Allowed))
}

func quoteList(names []string) string {
	if len(names) == 0 {
		return "no other namespace"
	}
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

// UnsafeValueError refuses inventory data that Kargo would evaluate as an
// expression.
type UnsafeValueError struct {
	// Target is the target's name (possibly the unsafe value itself, quoted).
	Target string
	// Source is the inventory kind.
	Source string
	// Field names what holds the marker: name, labels.<key>, params.<key>.
	Field string
}

// maxErrorName bounds, quoted, the target name and the field an
// UnsafeValueError names: it becomes a condition message, and the
// explanation must fit.
const maxErrorName = 256

func (e *UnsafeValueError) Error() string {
	return fmt.Sprintf("target %s of source %s: %s contains %q, which Kargo would evaluate as an expression; "+
		"remove it from the inventory object (no target of this FleetStage is planned until then)",
		strutil.Quote(e.Target, maxErrorName), e.Source, strutil.Ellipsis(e.Field, maxErrorName), ExpressionMarker)
}

// CheckExpressions returns an UnsafeValueError for the first target whose
// name, labels or params (keys or values) hold ExpressionMarker, or nil.
//
// The whole read fails rather than the one target being skipped: a skipped
// target looks removed from the fleet, and its Stage would be pruned.
func CheckExpressions(targets []plan.Target) error {
	for i := range targets {
		t := &targets[i]
		if strings.Contains(t.Name, ExpressionMarker) {
			return &UnsafeValueError{Target: t.Name, Source: t.Source, Field: "name"}
		}
		for _, group := range []struct {
			name string
			m    map[string]string
		}{{"labels", t.Labels}, {"params", t.Params}} {
			for _, k := range slices.Sorted(maps.Keys(group.m)) {
				if strings.Contains(k, ExpressionMarker) || strings.Contains(group.m[k], ExpressionMarker) {
					return &UnsafeValueError{Target: t.Name, Source: t.Source, Field: group.name + "." + k}
				}
			}
		}
	}
	return nil
}
