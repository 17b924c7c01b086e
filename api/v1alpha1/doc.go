// Package v1alpha1 holds the kargo-fleet API: FleetStage, which expands one
// Kargo Stage into a fleet of target Stages grouped in waves, and FleetRollout,
// the record of one Freight moving through that fleet.
//
// The package imports only the standard library and k8s.io/apimachinery so it
// can become a module of its own.
//
// +kubebuilder:object:generate=true
// +groupName=fleet.kargo-fleet.io
package v1alpha1
