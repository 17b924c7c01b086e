// Package fleetrollout owns the FleetRollout object outside its API types:
// the labels and annotations kargo-fleet puts on it, how rollouts and their
// plan snapshots are named, how forward rollouts and rollbacks are built,
// and the rules that order them and hold Freight back. Whether and how a
// rollout is rolled back is internal/rollout's decision (PlanRollback). It
// holds no client: internal/rolloutstore reads and creates them through the
// API server, so the pure packages that use these rules link no client
// library. The step server, the rollout controller and the CLI all go
// through it, so a FleetRollout has one shape whoever creates it: in
// particular every attempt at rolling back a rollout has one name, because
// every creator derives it from the rollout it undoes and the attempt.
package fleetrollout
