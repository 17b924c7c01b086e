package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Defaults applied in code (see fleetstage/api/v1alpha1/defaults.go); the CRD
// carries no defaults so that an unset field keeps following the project's
// default when it changes.
const (
	// DefaultMaxConcurrent is the number of targets of a wave promoted at once.
	DefaultMaxConcurrent = 10
	// DefaultProgressDeadline is how long one target may take to succeed.
	DefaultProgressDeadline = "15m"
	// DefaultArgoCDNamespace is where Argo CD cluster Secrets are read from.
	DefaultArgoCDNamespace = "argocd"
	// MaxSoak bounds a wave's soak and a requiredSoakTime (30 days): a longer
	// soak is a typo that would hold the fleet for years (the CRD's CEL rules
	// repeat the value).
	MaxSoak = "720h"
	// MinProgressDeadline bounds a wave's progressDeadline from below: a
	// target Promotion cannot succeed faster, so a shorter deadline fails
	// every target.
	MinProgressDeadline = "30s"
	// FrozenLabel excludes a target from every FleetStage while it is present.
	FrozenLabel = "fleet.kargo-fleet.io/frozen"
	// ComplianceHoldLabel excludes a target from every FleetStage while present.
	ComplianceHoldLabel = "fleet.kargo-fleet.io/compliance-hold"
	// TeamLabel is the target label team scoping reads.
	TeamLabel = "fleet.kargo-fleet.io/team"
	// AllowedTeamsAnnotation, on a Kargo Project namespace, lists the teams
	// (comma separated) whose targets FleetStages of that Project may select.
	// Only administrators can change namespaces, which is why it lives there.
	AllowedTeamsAnnotation = "fleet.kargo-fleet.io/allowed-teams"
)

// FleetStage expands one Kargo Stage into a fleet: one target Stage per selected
// target, grouped in ordered waves, each wave driven by a wave Stage whose
// promotion runs the fleet-wave step.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=fs;fleet
// +kubebuilder:printcolumn:name="Targets",type=integer,JSONPath=`.status.targets.selected`
// +kubebuilder:printcolumn:name="Waves",type=integer,JSONPath=`.status.waveCount`
// +kubebuilder:printcolumn:name="Last Good",type=string,JSONPath=`.status.lastGoodFreight.name`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 30 && self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name: a FleetStage name must be a DNS label of at most 30 characters (it prefixes the names of its Stages)"
type FleetStage struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec describes the Stage to expand, the targets, the waves and the policies.
	// +required
	Spec FleetStageSpec `json:"spec"`

	// status reports what the controller resolved and generated.
	// +optional
	Status FleetStageStatus `json:"status,omitempty"`
}

// FleetStageSpec is the desired fleet.
// +kubebuilder:validation:XValidation:rule="self.waves.all(w, self.waves.exists_one(x, x.name == w.name))",message="spec.waves: wave names must be unique"
// +kubebuilder:validation:XValidation:rule="self.waves.all(i, w, i == size(self.waves) - 1 || has(w.selector) || has(w.expression) || has(w.count))",message="spec.waves: only the last wave may be a catch-all (no selector, expression or count)"
type FleetStageSpec struct {
	// stage is the Kargo Stage being expanded: the name of an existing Stage to
	// adopt, or an inline Stage spec.
	// +required
	Stage StageSource `json:"stage"`

	// targets says where targets come from and which of them the fleet selects.
	// +required
	Targets TargetsSpec `json:"targets"`

	// waves are the ordered groups the fleet is promoted in. A target joins the
	// first wave that matches it.
	// +required
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	Waves []Wave `json:"waves"`

	// policy holds fleet-wide rules: threshold, constraints, windows, rollback.
	// +optional
	Policy FleetPolicy `json:"policy,omitempty"`
}

// StageSource names the Stage a FleetStage expands. Exactly one field is set.
// +kubebuilder:validation:XValidation:rule="has(self.fromStage) != has(self.inline)",message="spec.stage: exactly one of fromStage or inline must be set"
type StageSource struct {
	// fromStage adopts an existing Kargo Stage of this Project: its requested
	// Freight, promotion template and verification become the per-target template.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	FromStage string `json:"fromStage,omitempty"`

	// inline is a Kargo Stage spec (requestedFreight, promotionTemplate,
	// verification, vars) used as the per-target template.
	// +optional
	Inline *InlineStageSpec `json:"inline,omitempty"`
}

// InlineStageSpec is the subset of Kargo's StageSpec a FleetStage renders into
// target Stages. Templates and verification are kept as Kargo writes them.
type InlineStageSpec struct {
	// requestedFreight is the Freight the fleet's first wave takes, as in Kargo.
	// +required
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	RequestedFreight []RequestedFreight `json:"requestedFreight"`

	// promotionTemplate is Kargo's promotion template for ONE target.
	// +required
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	PromotionTemplate runtime.RawExtension `json:"promotionTemplate"`

	// verification is Kargo's verification for ONE target.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	Verification *runtime.RawExtension `json:"verification,omitempty"`

	// vars are Stage variables shared by every target Stage.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	Vars []Var `json:"vars,omitempty"`
}

// RequestedFreight mirrors Kargo's requested Freight entry.
type RequestedFreight struct {
	// origin is where the Freight comes from.
	// +required
	Origin FreightOrigin `json:"origin"`

	// sources says how Freight becomes available to the first wave.
	// +required
	Sources FreightSources `json:"sources"`
}

// FreightOrigin identifies the Warehouse that produced a Freight.
type FreightOrigin struct {
	// kind is the origin kind; Kargo knows only Warehouse.
	// +required
	// +kubebuilder:validation:Enum=Warehouse
	Kind string `json:"kind"`

	// name is the origin's name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// FreightSources mirrors Kargo's Freight sources.
// +kubebuilder:validation:XValidation:rule="(has(self.direct) && self.direct) || (has(self.stages) && size(self.stages) > 0)",message="sources: set direct or name at least one upstream Stage in stages, else no Freight is ever available"
type FreightSources struct {
	// direct makes Freight available straight from the origin.
	// +optional
	Direct bool `json:"direct,omitempty"` //nolint:kubeapilinter // mirrors Kargo's field

	// stages are upstream Stages the Freight must be verified in first.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	Stages []string `json:"stages,omitempty"`

	// requiredSoakTime is how long Freight must have been verified upstream:
	// at least 0s, at most 720h.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s') && duration(self) <= duration('720h')",message="requiredSoakTime must be between 0s and 720h (30 days)"
	RequiredSoakTime *metav1.Duration `json:"requiredSoakTime,omitempty"`
}

// Var is a named Stage variable.
type Var struct {
	// name must be a valid Kargo variable name.
	// +required
	// +kubebuilder:validation:Pattern=`^[a-zA-Z_]\w*$`
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`

	// value is the variable's value; it may hold a ${{ }} expression.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Value string `json:"value,omitempty"`
}

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

	// soak is how long Freight must stay verified in this wave before the next
	// wave may take it (the next wave Stage's requiredSoakTime): between 0s
	// and 720h (30 days).
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s') && duration(self) <= duration('720h')",message="soak must be between 0s and 720h (30 days)"
	Soak *metav1.Duration `json:"soak,omitempty"`

	// approval makes the wave wait for `kargo approve`. Default None.
	// +optional
	Approval ApprovalPolicy `json:"approval,omitempty"`
}

// InFlightPolicy says what happens to running target Promotions on a halt.
// +kubebuilder:validation:Enum=Finish;Abort
type InFlightPolicy string

// In-flight policies.
const (
	// InFlightFinish lets running target Promotions finish.
	InFlightFinish InFlightPolicy = "Finish"
	// InFlightAbort aborts running target Promotions through Kargo.
	InFlightAbort InFlightPolicy = "Abort"
)

// RollbackMode says when the fleet rolls back.
// +kubebuilder:validation:Enum=Manual;Automatic
type RollbackMode string

// Rollback modes.
const (
	// RollbackManual rolls back only on request (CLI or fleet-rollback step).
	RollbackManual RollbackMode = "Manual"
	// RollbackAutomatic rolls back as soon as a threshold is breached.
	RollbackAutomatic RollbackMode = "Automatic"
)

// SupersedePolicy says what a newer Freight does to a running rollout.
// +kubebuilder:validation:Enum=Queue;Supersede
type SupersedePolicy string

// Supersede policies.
const (
	// SupersedeQueue lets the running rollout finish first.
	SupersedeQueue SupersedePolicy = "Queue"
	// SupersedeReplace stops starting targets for the old Freight and moves on.
	SupersedeReplace SupersedePolicy = "Supersede"
)

// FleetPolicy holds fleet-wide rules.
type FleetPolicy struct {
	// maxFailures is a fleet-wide failure threshold across every wave of one
	// rollout: a number or a percentage of all targets (rounded down). Unset:
	// only per-wave thresholds apply.
	// +optional
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:MaxLength=5
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? int(self) >= 0 : string(self).matches('^(100|[1-9]?[0-9])%$')",message="maxFailures must be a non-negative integer or a percentage between 0% and 100%"
	MaxFailures *intstr.IntOrString `json:"maxFailures,omitempty"`

	// onHalt says what happens to running target Promotions when a threshold
	// is breached. Default Finish.
	// +optional
	OnHalt InFlightPolicy `json:"onHalt,omitempty"`

	// newerFreight says what a newer Freight does to a running rollout.
	// Default Queue.
	// +optional
	NewerFreight SupersedePolicy `json:"newerFreight,omitempty"`

	// constraints limit targets in flight per label value, across every
	// rollout of this FleetStage.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	Constraints []ConcurrencyConstraint `json:"constraints,omitempty"`

	// windows are change windows; outside an allowing window (or inside a
	// denying one) no new target Promotion starts.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	Windows []ChangeWindow `json:"windows,omitempty"`

	// rollback says when and how the fleet returns to its last good Freight.
	// +optional
	Rollback RollbackPolicy `json:"rollback,omitempty"`
}

// ConcurrencyConstraint limits targets in flight per value of a label.
type ConcurrencyConstraint struct {
	// name identifies the constraint in status and messages.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`

	// labelKey groups targets by this label's value.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	LabelKey string `json:"labelKey"`

	// maxInFlight is the most targets of one label value in flight at once.
	// +required
	// +kubebuilder:validation:Minimum=1
	MaxInFlight int32 `json:"maxInFlight"`

	// selector restricts the constraint to matching targets.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
}

// WindowType says whether a window allows or denies changes.
// +kubebuilder:validation:Enum=Allow;Deny
type WindowType string

// Window types.
const (
	// WindowAllow permits changes while open; with any allow window present,
	// changes need one to be open.
	WindowAllow WindowType = "Allow"
	// WindowDeny forbids changes while open; deny wins over allow.
	WindowDeny WindowType = "Deny"
)

// ChangeWindow is a recurring period that allows or denies changes.
type ChangeWindow struct {
	// name identifies the window in status and messages.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`

	// type is Allow or Deny.
	// +required
	Type WindowType `json:"type"`

	// schedule is a five-field cron expression for when the window opens.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Schedule string `json:"schedule"`

	// duration is how long the window stays open.
	// +required
	Duration metav1.Duration `json:"duration"`

	// timeZone is an IANA time zone for the schedule. Default UTC.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	TimeZone string `json:"timeZone,omitempty"`

	// selector restricts the window to matching targets. Unset: every target.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
}

// RollbackPolicy says when and how the fleet rolls back.
type RollbackPolicy struct {
	// mode is Manual or Automatic (on a threshold breach). Default Manual.
	// +optional
	Mode RollbackMode `json:"mode,omitempty"`

	// maxConcurrent is how many targets roll back at once, a number or a
	// percentage of the targets being rolled back. Default: the wave's maxConcurrent.
	// +optional
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:MaxLength=5
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? int(self) >= 1 : string(self).matches('^(100|[1-9][0-9]?)%$')",message="maxConcurrent must be a positive integer or a percentage between 1% and 100%"
	MaxConcurrent *intstr.IntOrString `json:"maxConcurrent,omitempty"`
}

// FleetStageStatus reports what the controller resolved and generated. Every
// list in it is bounded: per-target truth lives on the target Stages.
type FleetStageStatus struct {
	// conditions: Ready, TargetsResolved, StagesSynced.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=32
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// observedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// targets counts candidate, selected, excluded and unassigned targets.
	// +optional
	Targets TargetCounts `json:"targets,omitzero"`

	// waveCount is the number of waves.
	// +optional
	WaveCount int32 `json:"waveCount,omitempty"`

	// waves reports each wave's Stage and membership.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	Waves []WaveMembership `json:"waves,omitempty"`

	// versions says how many targets currently run which Freight.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=21
	Versions []FreightCount `json:"versions,omitempty"`

	// lastGoodFreight is the newest Freight every wave passed with.
	// +optional
	LastGoodFreight *FreightReference `json:"lastGoodFreight,omitempty"`

	// currentRollout names the FleetRollout in progress.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	CurrentRollout string `json:"currentRollout,omitempty"`

	// lastRollout names the most recent finished FleetRollout.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	LastRollout string `json:"lastRollout,omitempty"`
}

// TargetCounts counts targets by how the selection treated them.
type TargetCounts struct {
	// candidates is the number of targets the sources returned.
	// +optional
	Candidates int32 `json:"candidates,omitempty"`
	// selected is the number of targets in the fleet.
	// +optional
	Selected int32 `json:"selected,omitempty"`
	// excluded is the number of candidates excluded by labels or team scoping.
	// +optional
	Excluded int32 `json:"excluded,omitempty"`
	// unassigned is the number of selected targets no wave took.
	// +optional
	Unassigned int32 `json:"unassigned,omitempty"`
	// excludedByReason counts exclusions per reason.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	ExcludedByReason []ReasonCount `json:"excludedByReason,omitempty"`
	// samples lists up to 10 excluded or unassigned targets with the reason.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10
	Samples []TargetSample `json:"samples,omitempty"`
}

// ReasonCount is a reason and how many targets it applies to.
type ReasonCount struct {
	// reason is a short PascalCase reason.
	// +required
	// +kubebuilder:validation:MaxLength=128
	Reason string `json:"reason"`
	// count is the number of targets.
	// +required
	Count int32 `json:"count"`
}

// TargetSample names one target and why it is listed.
type TargetSample struct {
	// name is the target's name.
	// +required
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// reason says why the target is listed.
	// +required
	// +kubebuilder:validation:MaxLength=256
	Reason string `json:"reason"`
}

// WaveMembership reports one wave.
type WaveMembership struct {
	// name is the wave's name.
	// +required
	// +kubebuilder:validation:MaxLength=24
	Name string `json:"name"`
	// stage is the wave Stage's name.
	// +required
	// +kubebuilder:validation:MaxLength=253
	Stage string `json:"stage"`
	// members is the number of targets in the wave.
	// +optional
	Members int32 `json:"members,omitempty"`
}

// FreightCount is a Freight and how many targets currently run it.
type FreightCount struct {
	// freight is the Freight's name; "other" sums Freight past the 20th.
	// +required
	// +kubebuilder:validation:MaxLength=253
	Freight string `json:"freight"`
	// targets is the number of targets whose current Freight it is.
	// +required
	Targets int32 `json:"targets"`
}

// FreightReference names a Freight.
type FreightReference struct {
	// name is the Freight's name: Kargo names Freight with 40 hex digits;
	// any lowercase DNS subdomain is accepted.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`
	// origin is the Warehouse that produced it.
	// +optional
	Origin *FreightOrigin `json:"origin,omitempty"`
}

// FleetStageList is a list of FleetStages.
//
// +kubebuilder:object:root=true
type FleetStageList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []FleetStage `json:"items"`
}
