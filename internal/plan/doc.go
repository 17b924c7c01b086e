// Package plan is the pure core of kargo-fleet: it turns a FleetStage spec and
// a snapshot of inventory targets into a wave plan, decides which targets may
// start now, and judges failure thresholds.
//
// Everything here is a function of its inputs: no client, no clock (callers
// pass `now`), no randomness. The controller, the fleet-wave step, the dry-run
// preview and the CLI call the same functions, so they always agree.
//
// The flow is:
//
//	Compile(spec)            -> *Planner (selectors parsed, expressions compiled once)
//	Planner.Plan(input)      -> *WavePlan (selection, exclusions, waves, PlanHash)
//	NewScheduleIndex(plan, policy) -> *ScheduleIndex (per-target window and constraint data)
//	Schedule(index, request) -> ScheduleDecision (targets to start, or why not and until when)
//	Verdict(thresholds, failures) -> ThresholdVerdict (Continue or Halt)
//
// Validate(spec) returns the same errors Compile does, with full field paths,
// for the validating webhook and the CLI.
package plan
