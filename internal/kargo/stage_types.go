package kargo

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Stage is a Kargo Stage.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
type Stage struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              StageSpec   `json:"spec"`
	Status            StageStatus `json:"status,omitempty"`
}

// StageSpec mirrors the Stage spec fields kargo-fleet renders.
//
// +kubebuilder:pruning:PreserveUnknownFields
type StageSpec struct {
	RequestedFreight  []FreightRequest      `json:"requestedFreight"`
	Vars              []ExpressionVariable  `json:"vars,omitempty"`
	PromotionTemplate *PromotionTemplate    `json:"promotionTemplate,omitempty"`
	Verification      *apiextensionsv1.JSON `json:"verification,omitempty"`
	Shard             string                `json:"shard,omitempty"`
}

// FreightRequest is one entry of requestedFreight.
type FreightRequest struct {
	Origin  FreightOrigin  `json:"origin"`
	Sources FreightSources `json:"sources"`
}

// FreightOrigin names a Warehouse.
type FreightOrigin struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
}

// Key returns the origin's key as Kargo uses it in freight history maps.
func (o FreightOrigin) Key() string { return o.Kind + "/" + o.Name }

// OriginKindWarehouse is the only origin kind Kargo knows.
const OriginKindWarehouse = "Warehouse"

// FreightSources says where a Stage may take Freight from.
type FreightSources struct {
	Direct               bool                  `json:"direct,omitempty"`
	Stages               []string              `json:"stages,omitempty"`
	RequiredSoakTime     *metav1.Duration      `json:"requiredSoakTime,omitempty"`
	AvailabilityStrategy string                `json:"availabilityStrategy,omitempty"`
	AutoPromotionOptions *AutoPromotionOptions `json:"autoPromotionOptions,omitempty"`
}

// AutoPromotionOptions tunes how an auto-promoting Stage picks Freight.
type AutoPromotionOptions struct {
	// SelectionPolicy is NewestFreight (default) or MatchUpstream.
	SelectionPolicy string `json:"selectionPolicy,omitempty"`
}

// Auto-promotion selection policies.
const (
	SelectionNewestFreight = "NewestFreight"
	SelectionMatchUpstream = "MatchUpstream"
)

// ExpressionVariable is a named variable.
type ExpressionVariable struct {
	Name  string `json:"name"`
	Value string `json:"value,omitempty"`
}

// PromotionTemplate is a Stage's template for its Promotions.
type PromotionTemplate struct {
	Spec PromotionTemplateSpec `json:"spec"`
}

// PromotionTemplateSpec holds the template's vars and steps.
type PromotionTemplateSpec struct {
	Vars  []ExpressionVariable `json:"vars,omitempty"`
	Steps []PromotionStep      `json:"steps,omitempty"`
}

// PromotionStep is one step of a template, a Promotion or a task.
type PromotionStep struct {
	Uses            string                `json:"uses,omitempty"`
	Task            *PromotionTaskRef     `json:"task,omitempty"`
	As              string                `json:"as,omitempty"`
	If              string                `json:"if,omitempty"`
	ContinueOnError bool                  `json:"continueOnError,omitempty"`
	Retry           *PromotionStepRetry   `json:"retry,omitempty"`
	Vars            []ExpressionVariable  `json:"vars,omitempty"`
	Config          *apiextensionsv1.JSON `json:"config,omitempty"`
}

// PromotionTaskRef points a step at a PromotionTask or ClusterPromotionTask.
type PromotionTaskRef struct {
	Name string `json:"name"`
	Kind string `json:"kind,omitempty"`
}

// Task kinds a step may reference.
const (
	PromotionTaskKind        = "PromotionTask"
	ClusterPromotionTaskKind = "ClusterPromotionTask"
)

// PromotionStepRetry bounds a step's retries.
type PromotionStepRetry struct {
	Timeout        *metav1.Duration `json:"timeout,omitempty"`
	ErrorThreshold uint32           `json:"errorThreshold,omitempty"`
}

// StageStatus mirrors the Stage status fields kargo-fleet reads (and the
// simulator writes).
//
// +kubebuilder:pruning:PreserveUnknownFields
type StageStatus struct {
	Conditions         []metav1.Condition           `json:"conditions,omitempty"`
	ObservedGeneration int64                        `json:"observedGeneration,omitempty"`
	LastHandledRefresh string                       `json:"lastHandledRefresh,omitempty"`
	FreightHistory     []FreightCollection          `json:"freightHistory,omitempty"`
	CurrentPromotion   *PromotionReference          `json:"currentPromotion,omitempty"`
	LastPromotion      *PromotionReference          `json:"lastPromotion,omitempty"`
	Health             *Health                      `json:"health,omitempty"`
	AutoPromotionHolds map[string]AutoPromotionHold `json:"autoPromotionHolds,omitempty"`
	// EffectiveAutoPromotionHolds are the holds in force at the last
	// auto-promotion decision, including ones set by Promotions not yet
	// recorded in AutoPromotionHolds.
	EffectiveAutoPromotionHolds map[string]AutoPromotionHold `json:"effectiveAutoPromotionHolds,omitempty"`
	// AutoPromotionEnabled says whether the Project's ProjectConfig enables
	// auto-promotion for the Stage.
	AutoPromotionEnabled bool `json:"autoPromotionEnabled,omitempty"`
	// FreightSummary is a short human-readable summary of the current Freight.
	FreightSummary string `json:"freightSummary,omitempty"`
}

// FreightCollection is one entry of a Stage's freight history: the Freight
// (one per origin) that was live together, and its verifications.
type FreightCollection struct {
	ID                  string                      `json:"id"`
	Items               map[string]FreightReference `json:"items,omitempty"`
	VerificationHistory []VerificationInfo          `json:"verificationHistory,omitempty"`
}

// FreightReference names a Freight and its origin.
type FreightReference struct {
	Name   string        `json:"name,omitempty"`
	Origin FreightOrigin `json:"origin,omitempty"`
}

// VerificationInfo is one verification of a freight collection.
type VerificationInfo struct {
	ID         string       `json:"id,omitempty"`
	Actor      string       `json:"actor,omitempty"`
	StartTime  *metav1.Time `json:"startTime,omitempty"`
	FinishTime *metav1.Time `json:"finishTime,omitempty"`
	Phase      string       `json:"phase,omitempty"`
	Message    string       `json:"message,omitempty"`
}

// Verification phases kargo-fleet reads.
const (
	VerificationSuccessful = "Successful"
	VerificationFailed     = "Failed"
	VerificationError      = "Error"
	VerificationRunning    = "Running"
)

// PromotionReference is a Stage's view of one of its Promotions.
type PromotionReference struct {
	Name       string            `json:"name"`
	Freight    *FreightReference `json:"freight,omitempty"`
	Status     *PromotionStatus  `json:"status,omitempty"`
	FinishedAt *metav1.Time      `json:"finishedAt,omitempty"`
}

// Health is a Stage's health.
type Health struct {
	Status string   `json:"status,omitempty"`
	Issues []string `json:"issues,omitempty"`
}

// Health states.
const (
	HealthHealthy     = "Healthy"
	HealthUnhealthy   = "Unhealthy"
	HealthProgressing = "Progressing"
	HealthUnknown     = "Unknown"
)

// AutoPromotionHold stops auto-promotion of a Stage after a manual
// promotion of Freight that is not the auto-promotion candidate.
type AutoPromotionHold struct {
	FreightName   string        `json:"freightName"`
	Origin        FreightOrigin `json:"origin"`
	PromotionName string        `json:"promotionName,omitempty"`
	Actor         string        `json:"actor,omitempty"`
	CreatedAt     *metav1.Time  `json:"createdAt,omitempty"`
}

// Stage condition types.
const (
	ConditionVerified = "Verified"
	ConditionHealthy  = "Healthy"
	ConditionReady    = "Ready"
	// ConditionPromoting is True while a Promotion of the Stage is current.
	ConditionPromoting = "Promoting"
)

// StageList is a list of Stages.
//
// +kubebuilder:object:root=true
type StageList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Stage `json:"items"`
}
