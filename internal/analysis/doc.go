// Package analysis judges a wave of targets by its service signals: it turns
// a metric spec (a PromQL query template, an interval, a number of
// measurements, limits and an expr-lang success condition) into the queries
// for one wave, evaluates each measurement Prometheus returns, and decides
// whether the wave's analysis is still measuring, passed, failed, waits on
// inconclusive data, or asks a person.
//
// It is pure: it does no I/O and reads no clock. The caller (the FleetStage
// controller) fetches measurements through internal/promquery, passes them
// in with the time they were taken and `now`, and acts on the decision.
//
// The flow is:
//
//	Compile(analysis)                 -> *Program (templates parsed, conditions compiled once)
//	MetricProgram.Render(targetSets)  -> Queries (the wave's and the baseline's PromQL)
//	MetricProgram.Evaluate(m, wave)   -> Outcome (Successful, Failed, Inconclusive or Error, with a reason)
//	RunState.Record(outcome)          -> the run's counts, small enough for a status
//	Program.Decide(states, now)       -> WaveDecision (Measuring, Passed, Failed, Inconclusive, AskApproval)
//
// Validate returns every invalid field with its path, for the validating
// webhook. docs/analysis.md explains the statistics of baseline metrics.
package analysis
