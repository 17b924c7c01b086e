// Package inventory reads a FleetStage's candidate targets from its sources
// and normalises them into plan.Target values: Argo CD cluster Secrets, Kargo
// Target objects, SIG-Multicluster ClusterProfiles and targets written inline
// in the FleetStage spec.
//
// Readers are thin: one List call per source through a controller-runtime
// client.Reader (normally the manager's cache). Turning objects into targets
// is done by pure functions (FromArgoCDSecrets, FromKargoTargets,
// FromClusterProfiles, FromInline) that are unit tested without a client.
// An object becomes a target through its Projection (ProjectArgoCDSecret,
// ProjectKargoTarget, ProjectClusterProfile): everything of it a source
// selects on or a target is built from. The FleetStage controller compares
// an object's projections before and after an update with the same
// functions (Projection.Equal, Kind.SourceChanged), so an update the Reader
// would not see (a rotated credential) plans nothing again.
// Targets of one source come sorted by ID; deduplication across sources is
// the planner's job (see plan.ExclusionDuplicateTarget).
//
// What differs between kinds (GVK, the resource access is reviewed for,
// namespaces, required labels, optional watches, the converter) is one entry
// of a Kinds table (DefaultKinds), which the reader, the admission webhook,
// the FleetStage controller's watches and the manager's scheme and cache go
// through.
package inventory
