package kargo

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Project is a Kargo Project; its namespace carries the same name.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:subresource:status
type Project struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	Spec *apiextensionsv1.JSON `json:"spec,omitempty"`
}

// ProjectList is a list of Projects.
//
// +kubebuilder:object:root=true
type ProjectList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Project `json:"items"`
}

// ProjectConfig holds a Project's promotion policies; it is named like the
// Project.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
type ProjectConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              ProjectConfigSpec `json:"spec,omitempty"`
}

// ProjectConfigSpec mirrors the promotion policies.
//
// +kubebuilder:pruning:PreserveUnknownFields
type ProjectConfigSpec struct {
	PromotionPolicies []PromotionPolicy `json:"promotionPolicies,omitempty"`
}

// PromotionPolicy enables auto-promotion for selected Stages.
type PromotionPolicy struct {
	Stage                string                   `json:"stage,omitempty"`
	StageSelector        *PromotionPolicySelector `json:"stageSelector,omitempty"`
	AutoPromotionEnabled bool                     `json:"autoPromotionEnabled,omitempty"`
}

// PromotionPolicySelector selects Stages by name or labels.
type PromotionPolicySelector struct {
	Name                 string `json:"name,omitempty"`
	metav1.LabelSelector `json:",inline"`
}

// ProjectConfigList is a list of ProjectConfigs.
//
// +kubebuilder:object:root=true
type ProjectConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ProjectConfig `json:"items"`
}

// Target is a deployment target of Kargo's main branch; kargo-fleet reads it
// only as an inventory source.
//
// +kubebuilder:object:root=true
type Target struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              TargetSpec `json:"spec,omitempty"`
}

// TargetSpec holds a Target's free-form parameters.
type TargetSpec struct {
	// +kubebuilder:pruning:PreserveUnknownFields
	Params map[string]apiextensionsv1.JSON `json:"params,omitempty"`
}

// TargetList is a list of Targets.
//
// +kubebuilder:object:root=true
type TargetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Target `json:"items"`
}
