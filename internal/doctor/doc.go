// Package doctor holds the preflight checks of `kargo-fleet doctor`: is
// Kargo installed in a version kargo-fleet supports, are kargo-fleet's CRDs,
// ClusterPromotionTasks, step server, controller, webhook and step tokens in
// place, and, for one FleetStage, will its first rollout work (Argo CD
// Applications authorized for their target Stages, no auto-promotion that
// lets Freight skip the fleet, change windows that open, waves that can
// halt).
//
// The installation is found by its controller Deployment's labels
// (app.kubernetes.io/name, or app.kubernetes.io/instance for a named
// release), so any release name and namespace work.
//
// Each check reads the cluster through a client.Reader and hands what it
// read to a pure decision function (decide.go), table-tested without a
// cluster. A check returns one Result: ok, warn or fail, a message and, when
// not ok, the fix.
package doctor
