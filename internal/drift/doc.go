// Package drift finds the targets of a fleet that run Freight the fleet
// does not intend and no open rollout explains: a manual promotion into one
// target, an auto-promotion that slipped through, a rollback that failed.
//
// It is pure: the caller passes the target Stages' current Freight, the
// FleetStage's last good Freight and its open rollouts, and gets the drifted
// targets back. The version refresh controller, the dashboard and the CLI
// call the same function.
package drift
