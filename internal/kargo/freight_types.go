package kargo

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Freight is an immutable set of artifact references produced by a Warehouse.
// Its fields sit at the top level, not under spec, as in Kargo.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
type Freight struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Alias             string                 `json:"alias,omitempty"`
	Origin            FreightOrigin          `json:"origin"`
	Images            []apiextensionsv1.JSON `json:"images,omitempty"`
	Commits           []apiextensionsv1.JSON `json:"commits,omitempty"`
	Charts            []apiextensionsv1.JSON `json:"charts,omitempty"`
	// DiscoveredAt is when the Warehouse discovered the artifacts; Kargo
	// falls back to the creation time when it is unset.
	DiscoveredAt *metav1.Time  `json:"discoveredAt,omitempty"`
	Status       FreightStatus `json:"status,omitempty"`
}

// FreightStatus says where Freight is approved, verified and currently live.
// Keys are Stage names.
//
// +kubebuilder:pruning:PreserveUnknownFields
type FreightStatus struct {
	ApprovedFor map[string]ApprovedStage `json:"approvedFor,omitempty"`
	VerifiedIn  map[string]VerifiedStage `json:"verifiedIn,omitempty"`
	CurrentlyIn map[string]CurrentStage  `json:"currentlyIn,omitempty"`
}

// ApprovedStage records an approval.
type ApprovedStage struct {
	ApprovedAt *metav1.Time `json:"approvedAt,omitempty"`
}

// VerifiedStage records a successful verification in a Stage.
type VerifiedStage struct {
	VerifiedAt  *metav1.Time     `json:"verifiedAt,omitempty"`
	LongestSoak *metav1.Duration `json:"longestSoak,omitempty"`
}

// CurrentStage records since when Freight is live in a Stage.
type CurrentStage struct {
	Since *metav1.Time `json:"since,omitempty"`
}

// FreightList is a list of Freight.
//
// +kubebuilder:object:root=true
type FreightList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Freight `json:"items"`
}

// Warehouse discovers artifacts and produces Freight. kargo-fleet only names
// Warehouses, so the spec is kept opaque.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
type Warehouse struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	Spec *apiextensionsv1.JSON `json:"spec,omitempty"`
}

// WarehouseList is a list of Warehouses.
//
// +kubebuilder:object:root=true
type WarehouseList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Warehouse `json:"items"`
}
