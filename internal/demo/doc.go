// Package demo tells one fleet promotion story on a local control plane,
// with the Kargo simulator standing in for Kargo (see internal/fleetenv):
//
//  1. a Project with a Warehouse, two Freight, an adopted "prod" Stage and a
//     200-target FleetStage in four waves (pilot, canary, general, critical
//     behind an approval);
//  2. the good Freight is promoted into the first wave and reaches every
//     target;
//  3. the bad Freight is promoted: it breaks the canary targets in the eu
//     regions (fault injection in the simulator, confined to that Freight),
//     the canary wave breaches its failure threshold and halts, general and
//     critical never receive it, and the automatic rollback returns every
//     target that moved to the good Freight;
//  4. with a Prometheus on the machine (internal/promserver), which scrapes
//     the request counters the simulator serves per target, the canary wave
//     is gated on its error rate: a third Freight fails no step but 5 % of
//     its requests, the canary wave's analysis fails, the rollout halts and
//     is rolled back, and `kargo-fleet status` shows the analysis. Without
//     Prometheus this chapter is skipped, and the banner says why.
//
// Progress is drawn live with the status report (internal/report). Every
// step of the story is an expectation: Run stops at the first one that does
// not hold and says which, so `make demo` exits 0 only when the story
// happened as told.
package demo
