// Package fleetrollouts holds the FleetRollout reconciler, the rollout
// engine: each reconcile snapshots the FleetStage's plan, observes the
// Kargo Promotions, Stages and Freight of its targets, decides with the pure
// rollout package, applies the decision (target Promotions, halts,
// rollbacks) and writes the FleetRollout's status once.
package fleetrollouts
