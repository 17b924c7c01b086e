// Package fleetstatus holds what every writer of a FleetStage's status
// shares: the status-only patch and the version distribution.
//
// Three writers own disjoint parts of FleetStage.status, and each writes
// only its own part, through Patch, once per reconcile:
//   - the FleetStage reconciler (fleetstages): conditions, observedGeneration,
//     targets, waveCount, waves, and versions while it renders;
//   - the version refresh (versions): versions, between FleetStage reconciles,
//     and drift with the Drifted condition (the FleetStage reconciler keeps
//     conditions it does not set as it read them; when its write carries a
//     stale Drifted condition, the version refresh sees status.drift and the
//     condition disagree and writes them again);
//   - the FleetRollout reconciler (fleetrollouts): currentRollout,
//     lastRollout, lastGoodFreight, and history (summaries of the rollouts
//     its history limit deletes, written before it deletes them).
//
// Patch sends a merge patch of the fields that changed, so writers never
// overwrite each other's fields with what they read earlier. A merge patch
// replaces a list whole, though, and two writers share the conditions list:
// the version refresh (which sets Drifted) writes through PatchLocked, so a
// write computed from a stale read is refused and computed again.
package fleetstatus
