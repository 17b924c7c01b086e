// Package kargo is kargo-fleet's own typed mirror of the Kargo API fields it
// reads and writes (kargo.akuity.io/v1alpha1, as of Kargo v1.11.2; Target as
// of Kargo's main branch). It mirrors just enough: fields kargo-fleet does not
// use are absent, and the spec and status of every kind keep unknown fields
// so that nothing Kargo wrote is lost when these types round-trip an object.
//
// Kargo's own Go module is not a dependency: the mirror keeps kargo-fleet free
// of Kargo's dependency tree and pins exactly the contract it relies on.
//
// +kubebuilder:object:generate=true
// +versionName=v1alpha1
// +groupName=kargo.akuity.io
package kargo
