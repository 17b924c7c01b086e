// Package promqlcheck checks the syntax of PromQL queries with Prometheus's
// own parser, so admission refuses a query Prometheus would refuse, with
// Prometheus's message, instead of the first measurement of a rollout.
//
// Check is the analysis.QueryChecker of the FleetStage webhook's Validate.
package promqlcheck
