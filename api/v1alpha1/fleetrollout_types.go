package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RolloutDirection says whether a rollout moves the fleet forward or back.
// +kubebuilder:validation:Enum=Forward;Rollback
type RolloutDirection string

// Rollout directions.
const (
	// DirectionForward promotes new Freight wave by wave.
	DirectionForward RolloutDirection = "Forward"
	// DirectionRollback returns moved targets to the last good Freight, in
	// reverse wave order.
	DirectionRollback RolloutDirection = "Rollback"
)

// RolloutIntent is what operators want the rollout to do.
// +kubebuilder:validation:Enum=Run;Pause;Abort
type RolloutIntent string

// Rollout intents.
const (
	// IntentRun lets the rollout proceed.
	IntentRun RolloutIntent = "Run"
	// IntentPause starts no new target Promotion; running ones finish.
	IntentPause RolloutIntent = "Pause"
	// IntentAbort stops the rollout and aborts running target Promotions.
	IntentAbort RolloutIntent = "Abort"
)

// RolloutPhase is where a rollout stands.
// +kubebuilder:validation:Enum=Pending;Progressing;Paused;WaitingForApproval;Halted;RollingBack;Succeeded;Failed;Aborted;Superseded
type RolloutPhase string

// Rollout phases. Succeeded, Failed, Aborted and Superseded are final.
const (
	RolloutPending            RolloutPhase = "Pending"
	RolloutProgressing        RolloutPhase = "Progressing"
	RolloutPaused             RolloutPhase = "Paused"
	RolloutWaitingForApproval RolloutPhase = "WaitingForApproval"
	RolloutHalted             RolloutPhase = "Halted"
	RolloutRollingBack        RolloutPhase = "RollingBack"
	RolloutSucceeded          RolloutPhase = "Succeeded"
	RolloutFailed             RolloutPhase = "Failed"
	RolloutAborted            RolloutPhase = "Aborted"
	RolloutSuperseded         RolloutPhase = "Superseded"
)

// IsFinal reports whether no further change will happen to the rollout.
func (p RolloutPhase) IsFinal() bool {
	switch p {
	case RolloutSucceeded, RolloutFailed, RolloutAborted, RolloutSuperseded:
		return true
	}
	return false
}

// FleetRollout records one Freight transition of a FleetStage: the target
// snapshot and wave plan it was started with, operator intent, per-wave
// progress and failures grouped by reason. Together with Events it is the
// audit trail of a fleet promotion.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=fro
// +kubebuilder:printcolumn:name="Fleet",type=string,JSONPath=`.spec.fleetStage`
// +kubebuilder:printcolumn:name="Freight",type=string,JSONPath=`.spec.freight.name`
// +kubebuilder:printcolumn:name="Direction",type=string,JSONPath=`.spec.direction`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="!has(self.spec.rollbackOf) || self.spec.rollbackOf != self.metadata.name",message="spec.rollbackOf: a FleetRollout cannot roll back itself"
type FleetRollout struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec names the fleet, the Freight and the operator's intent.
	// +required
	Spec FleetRolloutSpec `json:"spec"`

	// status reports progress.
	// +optional
	Status FleetRolloutStatus `json:"status,omitempty"`
}

// FleetRolloutSpec is what the rollout is for. Only intent may change.
// +kubebuilder:validation:XValidation:rule="self.fleetStage == oldSelf.fleetStage && self.freight == oldSelf.freight && self.direction == oldSelf.direction && has(self.rollbackOf) == has(oldSelf.rollbackOf) && (!has(self.rollbackOf) || self.rollbackOf == oldSelf.rollbackOf)",message="spec: only spec.intent may change after creation"
// +kubebuilder:validation:XValidation:rule="self.direction == 'Rollback' ? has(self.rollbackOf) : !has(self.rollbackOf)",message="spec.rollbackOf is required for a Rollback and forbidden otherwise"
type FleetRolloutSpec struct {
	// fleetStage is the FleetStage, in this namespace, being promoted: its
	// name, a DNS label (no namespace).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	FleetStage string `json:"fleetStage"`

	// freight is the Freight the fleet moves to.
	// +required
	Freight FreightReference `json:"freight"`

	// direction is Forward or Rollback.
	// +required
	Direction RolloutDirection `json:"direction"`

	// rollbackOf names the FleetRollout, in this namespace, whose targets a
	// Rollback returns: a forward rollout of the same FleetStage, never the
	// rollback itself. It never changes after creation.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	RollbackOf string `json:"rollbackOf,omitempty"`

	// intent is Run, Pause or Abort. Default Run.
	// +optional
	Intent RolloutIntent `json:"intent,omitempty"`

	// actor is who or what started the rollout. The admission webhook
	// requires it to name the requesting user ("kubernetes:<username>"),
	// except for the controller's own requests, which carry the actor of the
	// Kargo Promotion they serve.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Actor string `json:"actor,omitempty"`
}

// FleetRolloutStatus reports a rollout's progress. Its size is bounded
// whatever the number of targets.
type FleetRolloutStatus struct {
	// conditions: Progressing, ThresholdBreached.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=32
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// observedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// phase is where the rollout stands.
	// +optional
	Phase RolloutPhase `json:"phase,omitempty"`

	// message says, for people, what the rollout is doing or waiting for.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`

	// snapshot is the target set and wave plan the rollout was started with.
	// +optional
	Snapshot *PlanSnapshot `json:"snapshot,omitempty"`

	// waves reports each wave's progress, in promotion order.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	Waves []WaveProgress `json:"waves,omitempty"`

	// failures groups failed targets by reason, with a few examples each.
	// +optional
	// +listType=map
	// +listMapKey=reason
	// +kubebuilder:validation:MaxItems=16
	Failures []FailureGroup `json:"failures,omitempty"`

	// startedAt is when the first target Promotion was created.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`

	// finishedAt is when the rollout reached a final phase.
	// +optional
	FinishedAt *metav1.Time `json:"finishedAt,omitempty"`

	// dispatch is the last batch of Promotions a controller claimed for the
	// rollout before creating them. It is written with an optimistic lock,
	// so two controllers that overlap (a leader that lost its Lease but has
	// not noticed yet, and the new one) never create the same Promotions:
	// one of them loses the write, and the other's claim holds it back
	// until the claimed Promotions exist.
	// +optional
	Dispatch *Dispatch `json:"dispatch,omitempty"`
}

// Dispatch is a batch of Promotions a controller claimed.
type Dispatch struct {
	// controller identifies the controller process that claimed the batch.
	// +required
	// +kubebuilder:validation:MaxLength=128
	Controller string `json:"controller"`

	// keys are the claimed Promotions: target IDs, and "wave:<name>" for the
	// Promotion of a wave Stage.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=260
	Keys []string `json:"keys,omitempty"`

	// at is when the batch was claimed.
	// +required
	At metav1.Time `json:"at"`
}

// PlanSnapshot pins the targets and waves a rollout works on, so membership
// changes during the rollout follow a written policy instead of surprising it.
type PlanSnapshot struct {
	// planHash identifies the wave plan the snapshot was taken from.
	// +required
	// +kubebuilder:validation:MaxLength=64
	PlanHash string `json:"planHash"`

	// targets is the number of targets in the snapshot.
	// +required
	Targets int32 `json:"targets"`

	// configMap names the immutable ConfigMap, owned by the rollout, holding
	// the gzip-compressed JSON plan (waves, members with their labels, and
	// resolved wave settings). It lives outside the rollout so that status
	// writes stay small at 10,000 targets.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	ConfigMap string `json:"configMap,omitempty"`

	// takenAt is when the snapshot was taken.
	// +optional
	TakenAt *metav1.Time `json:"takenAt,omitempty"`
}

// WavePhase is where one wave of a rollout stands.
// +kubebuilder:validation:Enum=Pending;WaitingForApproval;Progressing;Halted;Succeeded;Failed;Skipped
type WavePhase string

// Wave phases.
const (
	WavePending            WavePhase = "Pending"
	WaveWaitingForApproval WavePhase = "WaitingForApproval"
	WaveProgressing        WavePhase = "Progressing"
	WaveHalted             WavePhase = "Halted"
	WaveSucceeded          WavePhase = "Succeeded"
	WaveFailed             WavePhase = "Failed"
	WaveSkipped            WavePhase = "Skipped"
)

// WaveProgress counts one wave's targets by state.
type WaveProgress struct {
	// name is the wave's name.
	// +required
	// +kubebuilder:validation:MaxLength=24
	Name string `json:"name"`
	// phase is where the wave stands.
	// +optional
	Phase WavePhase `json:"phase,omitempty"`
	// total is the number of targets in the wave.
	// +optional
	Total int32 `json:"total,omitempty"`
	// succeeded counts targets whose Promotion succeeded and that are healthy.
	// +optional
	Succeeded int32 `json:"succeeded,omitempty"`
	// failed counts targets judged failed.
	// +optional
	Failed int32 `json:"failed,omitempty"`
	// inFlight counts targets with a running Promotion.
	// +optional
	InFlight int32 `json:"inFlight,omitempty"`
	// pending counts targets not started yet.
	// +optional
	Pending int32 `json:"pending,omitempty"`
	// blocked counts targets a FreightPolicy keeps off the rollout's
	// Freight: never started; the wave passes without them only when every
	// policy blocking them says Skip.
	// +optional
	Blocked int32 `json:"blocked,omitempty"`
	// waiting says why no target starts now, and until when if known.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Waiting string `json:"waiting,omitempty"`
	// startedAt is when the wave's first target Promotion was created.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// finishedAt is when the wave reached a final phase.
	// +optional
	FinishedAt *metav1.Time `json:"finishedAt,omitempty"`
	// analysis is the wave's analysis, once every target of the wave is
	// done: each metric's last value, verdict and reason.
	// +optional
	Analysis *WaveAnalysisStatus `json:"analysis,omitempty"`
}

// FailureGroup counts failed targets sharing a reason.
type FailureGroup struct {
	// reason is a short PascalCase reason, e.g. PromotionFailed, Unhealthy,
	// VerificationFailed, ProgressDeadlineExceeded.
	// +required
	// +kubebuilder:validation:MaxLength=128
	Reason string `json:"reason"`
	// count is the number of targets.
	// +required
	Count int32 `json:"count"`
	// examples names up to five targets with their message.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=5
	Examples []TargetSample `json:"examples,omitempty"`
}

// FleetRolloutList is a list of FleetRollouts.
//
// +kubebuilder:object:root=true
type FleetRolloutList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []FleetRollout `json:"items"`
}
