package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// ApprovalPolicy says whether a wave waits for `kargo approve`.
// +kubebuilder:validation:Enum=None;Required
type ApprovalPolicy string

// Approval policies.
const (
	// ApprovalNone lets a wave start as soon as the previous one passed.
	ApprovalNone ApprovalPolicy = "None"
	// ApprovalRequired holds a wave until the Freight is approved for its wave Stage.
	ApprovalRequired ApprovalPolicy = "Required"
)

// WavePromotionPolicy says who promotes Freight into a wave's Stage once the
// previous wave passed and soaked.
// +kubebuilder:validation:Enum=Auto;Manual
type WavePromotionPolicy string

// Wave promotion policies.
const (
	// WavePromotionAuto: kargo-fleet promotes the Freight into the wave Stage
	// as soon as the previous wave passed and its soak ended, so one
	// `kargo promote` into the first wave takes Freight through every wave.
	WavePromotionAuto WavePromotionPolicy = "Auto"
	// WavePromotionManual: the wave waits for someone to promote the Freight
	// into its wave Stage (`kargo promote`, the Kargo UI, or a ProjectConfig
	// auto-promotion policy).
	WavePromotionManual WavePromotionPolicy = "Manual"
)

// Wave is one ordered group of targets.
type Wave struct {
	// name identifies the wave; the wave Stage is named <fleetstage>-<name>.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=24
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// selector takes the remaining targets whose labels match.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`

	// expression takes the remaining targets for which this expr-lang boolean
	// is true (same environment as spec.targets.selector.expression).
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	Expression string `json:"expression,omitempty"`

	// count caps the wave: a number of targets, or a percentage of all selected
	// targets (rounded up). Matching targets are taken in a stable hash order,
	// so adding one target does not reshuffle the others.
	// +optional
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:MaxLength=5
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? int(self) >= 1 : string(self).matches('^(100|[1-9][0-9]?)%$')",message="count must be a positive integer or a percentage between 1% and 100%"
	Count *intstr.IntOrString `json:"count,omitempty"`

	// maxConcurrent is how many of the wave's targets are promoted at once: a
	// number or a percentage of the wave (rounded up, at least 1). Default 10.
	// +optional
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:MaxLength=5
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? int(self) >= 1 : string(self).matches('^(100|[1-9][0-9]?)%$')",message="maxConcurrent must be a positive integer or a percentage between 1% and 100%"
	MaxConcurrent *intstr.IntOrString `json:"maxConcurrent,omitempty"`

	// maxFailures is how many of the wave's targets may fail before the wave
	// halts: a number or a percentage of the wave (rounded down). Default 0.
	// +optional
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:MaxLength=5
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? int(self) >= 0 : string(self).matches('^(100|[1-9]?[0-9])%$')",message="maxFailures must be a non-negative integer or a percentage between 0% and 100%"
	MaxFailures *intstr.IntOrString `json:"maxFailures,omitempty"`

	// progressDeadline is how long one target may take to succeed before it
	// counts as failed: at least 30s. Default 15m.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('30s')",message="progressDeadline must be at least 30s"
	ProgressDeadline *metav1.Duration `json:"progressDeadline,omitempty"`

	// unhealthyGrace is how long a target's Stage may stay unhealthy after
	// its Promotion succeeded before the target counts as failed (reason
	// Unhealthy), without waiting for progressDeadline. It runs from the
	// Promotion's finish: Kargo records no time for a Stage's health. It
	// must be positive. Default 2m.
	// +optional
	UnhealthyGrace *metav1.Duration `json:"unhealthyGrace,omitempty"`

	// soak is how long Freight must stay verified in this wave before the next
	// wave may take it (the next wave Stage's requiredSoakTime): between 0s
	// and 720h (30 days).
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s') && duration(self) <= duration('720h')",message="soak must be between 0s and 720h (30 days)"
	Soak *metav1.Duration `json:"soak,omitempty"`

	// approval makes the wave wait for `kargo approve`. Default None.
	// +optional
	Approval ApprovalPolicy `json:"approval,omitempty"`

	// approvals makes the wave wait, before its first target starts, for
	// approvals of the rollout by this many distinct people, given with
	// `kargo-fleet approve` (docs/rollouts.md, "N-person approval").
	// +optional
	Approvals *WaveApprovals `json:"approvals,omitempty"`

	// promotion says who promotes Freight into this wave's Stage once the
	// previous wave passed and soaked: Auto (kargo-fleet) or Manual (an
	// operator or a Kargo auto-promotion policy). The first wave is always
	// promoted from outside the fleet (`kargo promote`). Default Auto.
	// +optional
	Promotion WavePromotionPolicy `json:"promotion,omitempty"`

	// analysis overrides spec.analysis for this wave: its metrics replace
	// the fleet's, and empty metrics turn the analysis off for the wave.
	// Unset: the wave runs spec.analysis.metrics.
	// +optional
	Analysis *WaveAnalysis `json:"analysis,omitempty"`
}

// WaveApprovals is an N-person approval of a wave.
type WaveApprovals struct {
	// count is how many distinct people must approve.
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10
	Count int32 `json:"count"`

	// groups, when set, counts only approvers in one of these Kubernetes
	// groups (as the API server authenticated them).
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=253
	Groups []string `json:"groups,omitempty"`

	// starterCounts counts the person who started the rollout as an
	// approver. Default false: four eyes means someone else's.
	// +optional
	StarterCounts bool `json:"starterCounts,omitempty"`
}
