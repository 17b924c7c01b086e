// Package kargosim is the Kargo simulator: a stand-in for Kargo v1.11.2's
// controller and its Promotion and Stage webhooks that runs beside
// kargo-fleet against the same apiserver, for tests and the demo, where real
// Kargo cannot run.
//
// It reproduces the Kargo behaviour kargo-fleet relies on (see
// docs/kargo-simulator.md for each behaviour, how faithful it is and the Kargo
// source it was checked against):
//
//   - admission: Promotion renaming to <stage>.<ulid>.<freight[:7]>, steps and
//     vars copied from the Stage's template, task expansion, the Freight
//     availability refusal and the custom "promote" verb check, and the Stage
//     rule that a template step referencing a task has neither 'if' nor
//     config, served as real mutating and validating webhooks (see
//     WebhookConfigurations);
//   - execution: one Promotion at a time per Stage, in name order, with real
//     "http" and "compose-output" steps, expr-lang expressions, retries, abort
//     (which never interrupts a step inside its request) and refresh;
//     "argocd-update" refuses existing Argo CD Applications whose
//     kargo.akuity.io/authorized-stage annotation does not name the Stage, as
//     Kargo does, and when it ends writes on each existing Application it
//     updated what Kargo's sync and Argo CD's run of it leave there (the
//     operation naming the Promotion and its initiator, Synced and Healthy
//     at the Freight's name as revision, or Failed and OutOfSync); every
//     other step kind (and the update itself) is simulated, its outcome
//     driven by fault-injection knobs on the target Stage (see FaultVar and
//     FaultLabel);
//   - Stage and Freight status: freight history, health, verification,
//     currentlyIn, verifiedIn (written a configurable delay after the
//     Promotion succeeds), auto-promotion with holds, and approvals (Approve);
//   - the API server's Promote, "Promote to downstream" and manual approval
//     (APIServer), which create Promotions under the API server's own
//     identity, naming the person only in the create-actor annotation.
//
// Everything it logs carries the logger name "kargo-simulator", so its lines
// can never be mistaken for real Kargo's.
package kargosim
