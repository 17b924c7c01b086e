// Package steps implements kargo-fleet's promotion steps: fleet-wave,
// fleet-rollback, fleet-gate and fleet-status.
//
// Every step has one contract: a config (validated against the JSON schema
// embedded from schemas/<step>.json, decoded into a typed struct, defaults
// applied) plus the Kargo context of the calling Promotion in, and a Result
// {state: Running|Succeeded|Failed, message, outputs} out. Run is convert
// (schema check and typed decode; a bad config is a TerminalError and the step
// Failed) followed by run. Steps are idempotent on promotion + step alias.
//
// The steps reach the cluster through a Store: APIStore reads and records
// intent on the API server. They reach Kargo through the step server
// (package internal/stepserver), which authenticates each call, checks its
// Promotion and hands the step its Input:
//
//   - Kargo OSS runs only built-in steps, so each step ships as a
//     ClusterPromotionTask (charts/kargo-fleet/tasks) whose built-in http steps
//     POST to /v1/steps/<name> and poll it.
//   - The Akuity Platform runs step images: `kargo-fleet step <name>` posts the
//     same request, polls, and writes the outputs to $KARGO_OUTPUT.
//
// A step only records intent (a FleetRollout, an annotation on it) and reads
// state; the rollout controller does the work and, when it finishes the work
// behind a polling step, asks Kargo to poll again at once
// (kargoclient.RefreshPromotion).
package steps
