package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

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
