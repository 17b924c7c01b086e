package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MaxAuditRecordsPerSegment is how many records one FleetAuditSegment
// holds; the controller starts a new segment when one is full.
const MaxAuditRecordsPerSegment = 256

// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=faudit,categories=kargo-fleet
// +kubebuilder:printcolumn:name="Fleet",type=string,JSONPath=`.spec.fleetStage`
// +kubebuilder:printcolumn:name="First",type=integer,JSONPath=`.spec.first`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// FleetAuditSegment holds consecutive records of a FleetStage's audit
// trail: every decision kargo-fleet made or admitted for the fleet, with who
// asked for it. Only the controller writes segments (an admission policy
// refuses everyone else), records are only ever appended, and each record
// carries the hash of the one before it, so an edit or a deletion anywhere
// breaks the chain `kargo-fleet audit --verify` checks. Segments do not
// belong to their FleetStage: the trail outlives the fleet, within the
// retention the controller is given.
type FleetAuditSegment struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec holds the records.
	// +required
	Spec FleetAuditSegmentSpec `json:"spec"`
}

// FleetAuditSegmentSpec is a run of audit records.
// +kubebuilder:validation:XValidation:rule="self.fleetStage == oldSelf.fleetStage && self.first == oldSelf.first && has(self.previousHash) == has(oldSelf.previousHash) && (!has(self.previousHash) || self.previousHash == oldSelf.previousHash)",message="spec: fleetStage, first and previousHash never change"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.records) || (has(self.records) && size(self.records) >= size(oldSelf.records))",message="spec.records: records are only appended"
type FleetAuditSegmentSpec struct {
	// fleetStage names the FleetStage, in this namespace, the records are
	// about.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	FleetStage string `json:"fleetStage"`

	// first is the sequence number of the first record.
	// +required
	// +kubebuilder:validation:Minimum=1
	First int64 `json:"first"`

	// previousHash is the hash of the record before the first one: that of
	// the last record of the previous segment, even when retention deleted
	// it. Empty for the FleetStage's first segment.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	PreviousHash string `json:"previousHash,omitempty"`

	// records are the records, in order.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=256
	Records []AuditRecord `json:"records,omitempty"`
}

// AuditRecord is one decision of the fleet.
type AuditRecord struct {
	// sequence numbers the FleetStage's records from 1, without gaps.
	// +required
	Sequence int64 `json:"sequence"`

	// time is when the decision was made.
	// +required
	Time metav1.MicroTime `json:"time"`

	// action is what was decided, e.g. RolloutStarted, WavePassed,
	// ThresholdBreached, PromotionRefused, BreakGlassPromotion,
	// ApprovalGiven, DriftReverted.
	// +required
	// +kubebuilder:validation:MaxLength=64
	Action string `json:"action"`

	// type is Normal or Warning, as the decision's Event.
	// +optional
	// +kubebuilder:validation:MaxLength=16
	Type string `json:"type,omitempty"`

	// actor is the person or system behind the decision, as Kargo and
	// kargo-fleet name them (e.g. email:alice@example.com, kubernetes:bob,
	// kargo-fleet for the controller's own decisions).
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Actor string `json:"actor,omitempty"`

	// identity is the Kubernetes user whose request the decision answered,
	// when there was one (the user the API server authenticated, e.g.
	// system:serviceaccount:kargo:kargo-api for the Kargo UI).
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Identity string `json:"identity,omitempty"`

	// rollout is the FleetRollout the decision is about.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Rollout string `json:"rollout,omitempty"`

	// wave is the wave the decision is about.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Wave string `json:"wave,omitempty"`

	// freight is the Freight the decision is about.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Freight string `json:"freight,omitempty"`

	// stage is the Kargo Stage the decision is about: a target Stage or a
	// wave Stage.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Stage string `json:"stage,omitempty"`

	// message says, for people, what was decided and why.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`

	// key identifies a decision that must be recorded once however often
	// it is seen (an approval, a break-glass Promotion).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Key string `json:"key,omitempty"`

	// hash is the hex SHA-256 of the previous record's hash and this
	// record's other fields (docs/audit.md).
	// +required
	// +kubebuilder:validation:MaxLength=64
	Hash string `json:"hash"`
}

// +kubebuilder:object:root=true

// FleetAuditSegmentList is a list of FleetAuditSegments.
type FleetAuditSegmentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []FleetAuditSegment `json:"items"`
}

// AuditHead is the last record of a FleetStage's audit trail the controller
// wrote, kept in the FleetStage's status: the trail must reach it, so
// deleting the newest records is seen too.
type AuditHead struct {
	// sequence is the record's sequence number.
	// +required
	Sequence int64 `json:"sequence"`

	// hash is the record's hash.
	// +required
	// +kubebuilder:validation:MaxLength=64
	Hash string `json:"hash"`

	// time is the record's time.
	// +required
	Time metav1.MicroTime `json:"time"`
}
