package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Defaults applied in code (see api/v1alpha1/defaults.go); the CRD
// carries no defaults so that an unset field keeps following the project's
// default when it changes.
const (
	// DefaultMaxConcurrent is the number of targets of a wave promoted at once.
	DefaultMaxConcurrent = 10
	// DefaultProgressDeadline is how long one target may take to succeed.
	DefaultProgressDeadline = "15m"
	// DefaultUnhealthyGrace is how long a target's Stage may stay unhealthy
	// after its Promotion succeeded before the target counts as failed.
	DefaultUnhealthyGrace = "2m"
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
// +kubebuilder:validation:XValidation:rule="has(self.analysis) || self.waves.all(w, !has(w.analysis) || !has(w.analysis.metrics) || size(w.analysis.metrics) == 0)",message="spec.waves[].analysis: a wave's metrics need spec.analysis.prometheus"
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

	// shards says which Kargo shard runs each target Stage and the wave
	// Stages, and bounds the target Promotions in flight per shard. Unset:
	// kargo-fleet leaves spec.shard of its Stages alone (docs/shards.md).
	// +optional
	Shards *ShardsSpec `json:"shards,omitempty"`

	// analysis gates every wave on metrics read from Prometheus
	// (docs/analysis.md): a wave passes only when each metric passed. Its
	// metrics are the default of every wave; spec.waves[].analysis
	// overrides them. Unset: waves pass on their targets alone.
	// +optional
	Analysis *FleetAnalysis `json:"analysis,omitempty"`
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

	// shards counts the targets on each Kargo shard ("" is the default
	// controller), most first; set when spec.shards is.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	Shards []ShardCount `json:"shards,omitempty"`

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

	// drift counts the targets running Freight the fleet does not intend
	// and no open rollout explains, with up to 10 examples.
	// +optional
	Drift *DriftStatus `json:"drift,omitempty"`

	// applications reports what the targets' Argo CD Applications show
	// that the fleet did not do: a sync or rollback made in Argo CD, Argo
	// CD's automated sync, a live resource changed outside Git, another
	// Kargo Stage's argocd-update (foreign), a Degraded or Missing
	// Application (broken), a break-glass Promotion (intended). Absent when
	// no Application shows anything, or the cluster serves no Applications.
	// +optional
	Applications *ApplicationDriftStatus `json:"applications,omitempty"`

	// stageRecord names the ConfigMap that records the name and UID of
	// every Stage the controller generated for this FleetStage (wave and
	// target Stages). The ConfigMap is immutable and named after a hash of
	// its content, so what it says cannot change while this field names it.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	StageRecord string `json:"stageRecord,omitempty"`

	// history summarises the newest 20 FleetRollouts that
	// spec.policy.historyLimit deleted, oldest first, so the record
	// outlives the objects.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=20
	History []RolloutRecord `json:"history,omitempty"`

	// audit is the newest record of the FleetStage's audit trail (its
	// FleetAuditSegments) the controller wrote: `kargo-fleet audit
	// --verify` checks the trail reaches it unchanged.
	// +optional
	Audit *AuditHead `json:"audit,omitempty"`
}

// RolloutRecord summarises a deleted FleetRollout.
type RolloutRecord struct {
	// name is the FleetRollout's name.
	// +required
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// direction is Forward or Rollback.
	// +required
	Direction RolloutDirection `json:"direction"`
	// freight is the Freight it promoted.
	// +required
	// +kubebuilder:validation:MaxLength=253
	Freight string `json:"freight"`
	// actor is who started it (spec.actor).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Actor string `json:"actor,omitempty"`
	// phase is the phase it finished in.
	// +optional
	Phase RolloutPhase `json:"phase,omitempty"`
	// startedAt is when it started.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// finishedAt is when it finished.
	// +optional
	FinishedAt *metav1.Time `json:"finishedAt,omitempty"`
}

// DriftStatus counts drifted targets and names a few.
type DriftStatus struct {
	// count is the number of drifted targets.
	// +required
	// +kubebuilder:validation:Minimum=0
	Count int32 `json:"count"`
	// examples lists up to 10 drifted targets, by target name.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10
	Examples []DriftedTarget `json:"examples,omitempty"`
}

// DriftedTarget is one drifted target.
type DriftedTarget struct {
	// target is the target's name.
	// +required
	// +kubebuilder:validation:MaxLength=253
	Target string `json:"target"`
	// stage is the target Stage's name.
	// +required
	// +kubebuilder:validation:MaxLength=253
	Stage string `json:"stage"`
	// freight is the Freight the target runs (names joined by "+" when it
	// runs Freight from more than one origin).
	// +required
	// +kubebuilder:validation:MaxLength=512
	Freight string `json:"freight"`
	// intendedFreight is the Freight the fleet intends the target to run.
	// +required
	// +kubebuilder:validation:MaxLength=253
	IntendedFreight string `json:"intendedFreight"`
}

// ApplicationDriftStatus counts, by class, the targets whose Argo CD
// Application shows what the fleet did not do, and names a few.
type ApplicationDriftStatus struct {
	// foreign counts Applications changed by anything but the fleet and
	// break-glass.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Foreign int32 `json:"foreign,omitempty"`
	// broken counts Applications that are Degraded or Missing.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Broken int32 `json:"broken,omitempty"`
	// intended counts Applications last synced by a break-glass Promotion.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Intended int32 `json:"intended,omitempty"`
	// examples lists up to 10 of them, foreign first, then broken, then
	// intended, by target name.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10
	Examples []ApplicationDrift `json:"examples,omitempty"`
}

// ApplicationDrift is what one target's Application shows.
type ApplicationDrift struct {
	// target is the target's name.
	// +required
	// +kubebuilder:validation:MaxLength=253
	Target string `json:"target"`
	// stage is the target Stage's name.
	// +required
	// +kubebuilder:validation:MaxLength=253
	Stage string `json:"stage"`
	// application is the Application, "<namespace>/<name>".
	// +required
	// +kubebuilder:validation:MaxLength=507
	Application string `json:"application"`
	// class is Foreign, Broken or Intended.
	// +required
	// +kubebuilder:validation:Enum=Foreign;Broken;Intended
	Class string `json:"class"`
	// reason says what was seen: ManualSync, AutomatedSync, OutOfSync,
	// OtherKargoStage, Degraded, Missing or BreakGlass.
	// +required
	// +kubebuilder:validation:MaxLength=64
	Reason string `json:"reason"`
	// message says it for humans.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
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
	// stageUID is the UID of the wave Stage the controller generated: a
	// Stage of the same name with another UID (re-created by someone else)
	// is not the wave Stage and the step server refuses it.
	// +optional
	// +kubebuilder:validation:MaxLength=36
	StageUID string `json:"stageUID,omitempty"`
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
