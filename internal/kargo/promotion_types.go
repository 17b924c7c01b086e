package kargo

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Promotion is a Kargo Promotion: one Freight to one Stage.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
type Promotion struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              PromotionSpec   `json:"spec"`
	Status            PromotionStatus `json:"status,omitempty"`
}

// PromotionSpec names the Stage and Freight. Kargo's webhook replaces Vars
// and Steps with the Stage's template, whatever the creator sent.
//
// +kubebuilder:pruning:PreserveUnknownFields
type PromotionSpec struct {
	Stage   string               `json:"stage"`
	Freight string               `json:"freight,omitempty"`
	Vars    []ExpressionVariable `json:"vars,omitempty"`
	Steps   []PromotionStep      `json:"steps,omitempty"`
}

// PromotionPhase is where a Promotion stands.
type PromotionPhase string

// Promotion phases.
const (
	PromotionPending   PromotionPhase = "Pending"
	PromotionRunning   PromotionPhase = "Running"
	PromotionSucceeded PromotionPhase = "Succeeded"
	PromotionFailed    PromotionPhase = "Failed"
	PromotionErrored   PromotionPhase = "Errored"
	PromotionAborted   PromotionPhase = "Aborted"
)

// IsTerminal reports whether the phase is final.
func (p PromotionPhase) IsTerminal() bool {
	switch p {
	case PromotionSucceeded, PromotionFailed, PromotionErrored, PromotionAborted:
		return true
	}
	return false
}

// PromotionStatus mirrors the Promotion status.
//
// +kubebuilder:pruning:PreserveUnknownFields
type PromotionStatus struct {
	Phase                 PromotionPhase          `json:"phase,omitempty"`
	Message               string                  `json:"message,omitempty"`
	Freight               *FreightReference       `json:"freight,omitempty"`
	FreightCollection     *FreightCollection      `json:"freightCollection,omitempty"`
	CurrentStep           int64                   `json:"currentStep,omitempty"`
	StepExecutionMetadata []StepExecutionMetadata `json:"stepExecutionMetadata,omitempty"`
	State                 *apiextensionsv1.JSON   `json:"state,omitempty"`
	LastHandledRefresh    string                  `json:"lastHandledRefresh,omitempty"`
	StartedAt             *metav1.Time            `json:"startedAt,omitempty"`
	FinishedAt            *metav1.Time            `json:"finishedAt,omitempty"`
}

// StepExecutionMetadata records how one step ran.
type StepExecutionMetadata struct {
	Alias           string       `json:"alias,omitempty"`
	StartedAt       *metav1.Time `json:"startedAt,omitempty"`
	FinishedAt      *metav1.Time `json:"finishedAt,omitempty"`
	ErrorCount      uint32       `json:"errorCount,omitempty"`
	Status          string       `json:"status,omitempty"`
	Message         string       `json:"message,omitempty"`
	ContinueOnError bool         `json:"continueOnError,omitempty"`
}

// Step statuses as Kargo records them.
const (
	StepRunning   = "Running"
	StepSucceeded = "Succeeded"
	StepFailed    = "Failed"
	StepErrored   = "Errored"
	StepAborted   = "Aborted"
	StepSkipped   = "Skipped"
)

// PromotionList is a list of Promotions.
//
// +kubebuilder:object:root=true
type PromotionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Promotion `json:"items"`
}

// PromotionTask is a namespaced, reusable list of steps.
//
// +kubebuilder:object:root=true
type PromotionTask struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              PromotionTaskSpec `json:"spec"`
}

// PromotionTaskSpec holds a task's inputs and steps. A var without a value
// is an input the calling step must supply.
//
// +kubebuilder:pruning:PreserveUnknownFields
type PromotionTaskSpec struct {
	Vars  []ExpressionVariable `json:"vars,omitempty"`
	Steps []PromotionStep      `json:"steps"`
}

// PromotionTaskList is a list of PromotionTasks.
//
// +kubebuilder:object:root=true
type PromotionTaskList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PromotionTask `json:"items"`
}

// ClusterPromotionTask is a cluster-scoped PromotionTask.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster
type ClusterPromotionTask struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              PromotionTaskSpec `json:"spec"`
}

// ClusterPromotionTaskList is a list of ClusterPromotionTasks.
//
// +kubebuilder:object:root=true
type ClusterPromotionTaskList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterPromotionTask `json:"items"`
}
