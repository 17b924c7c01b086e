// Package doctor holds the preflight checks of `kargo-fleet doctor`: is
// Kargo installed in a version kargo-fleet supports, are kargo-fleet's CRDs,
// ClusterPromotionTasks, step server, controller, webhook and step tokens in
// place, and, for one FleetStage, will its first rollout work (Argo CD
// Applications authorized for their target Stages, no auto-promotion that
// lets Freight skip the fleet, change windows that open, waves that can
// halt).
//
// Each check reads the cluster through a client.Reader and hands what it
// read to a pure decision function (decide.go), table-tested without a
// cluster. A check returns one Result: ok, warn or fail, a message and, when
// not ok, the fix.
package doctor
