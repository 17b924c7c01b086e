package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TargetsSpec describes the inventory and the selection.
type TargetsSpec struct {
	// sources are the inventories targets are read from; their union is the
	// candidate set. Target names must be unique across sources.
	// +required
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	Sources []TargetSource `json:"sources"`

	// selector picks targets from the candidate set. Empty selects them all.
	// +optional
	Selector TargetSelector `json:"selector,omitempty"`

	// excludeLabels are label keys whose presence on a target excludes it.
	// Default: fleet.kargo-fleet.io/frozen and fleet.kargo-fleet.io/compliance-hold.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=317
	ExcludeLabels []string `json:"excludeLabels,omitempty"`
}

// TargetSourceKind names an inventory.
// +kubebuilder:validation:Enum=ArgoCDCluster;KargoTarget;ClusterProfile;Inline
type TargetSourceKind string

// Inventory kinds.
const (
	// ArgoCDClusterSource reads Argo CD cluster Secrets.
	ArgoCDClusterSource TargetSourceKind = "ArgoCDCluster"
	// KargoTargetSource reads Kargo Target objects of the Project.
	KargoTargetSource TargetSourceKind = "KargoTarget"
	// ClusterProfileSource reads SIG-Multicluster ClusterProfiles.
	ClusterProfileSource TargetSourceKind = "ClusterProfile"
	// InlineSource takes the targets listed in the spec.
	InlineSource TargetSourceKind = "Inline"
)

// TargetSource is one inventory.
// +kubebuilder:validation:XValidation:rule="self.kind == 'Inline' ? has(self.inline) : !has(self.inline)",message="inline is required for kind Inline and forbidden otherwise"
type TargetSource struct {
	// kind is the inventory kind.
	// +required
	Kind TargetSourceKind `json:"kind"`

	// namespace to read from: default "argocd" for ArgoCDCluster, the
	// FleetStage's namespace for KargoTarget and ClusterProfile.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`

	// selector narrows the objects read from the inventory.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`

	// annotations lists object annotations copied into the target's params.
	// Annotations under kubectl.kubernetes.io/ are refused: kubectl keeps a
	// copy of the whole object there, Secret data included.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=317
	// +kubebuilder:validation:XValidation:rule="self.all(a, !a.startsWith('kubectl.kubernetes.io/'))",message="annotations under kubectl.kubernetes.io/ may not be copied: they can hold a copy of the object, Secret data included"
	Annotations []string `json:"annotations,omitempty"`

	// inline lists targets that are not Kubernetes objects.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=10000
	Inline []InlineTarget `json:"inline,omitempty"`
}

// InlineTarget is a target written in the spec.
type InlineTarget struct {
	// name identifies the target; it becomes part of its Stage's name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// labels classify the target for selection and waves.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`

	// params are the target's data, passed to its Stage as variables.
	// +optional
	Params map[string]string `json:"params,omitempty"`
}

// TargetSelector picks targets. A target is selected when it matches any label
// selector or glob (or there are none) AND the expression (when set).
type TargetSelector struct {
	// labelSelectors are OR-ed Kubernetes label selectors.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	LabelSelectors []metav1.LabelSelector `json:"labelSelectors,omitempty"`

	// labelGlobs match label values with shell globs ("us-*"), which label
	// selectors cannot. All globs of one entry must match; entries are OR-ed
	// together with labelSelectors.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	LabelGlobs []LabelGlobSelector `json:"labelGlobs,omitempty"`

	// expression is an expr-lang boolean over the target: name, source,
	// labels and params, e.g. `labels.tier == "gold" && int(params.cells) > 2`
	// (params are strings, as Stage variables are).
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	Expression string `json:"expression,omitempty"`
}

// LabelGlobSelector requires every listed label to match its glob.
type LabelGlobSelector struct {
	// matchGlobs maps label keys to path.Match globs.
	// +required
	// +kubebuilder:validation:MinProperties=1
	MatchGlobs map[string]string `json:"matchGlobs"`
}
