// Package fleetstages holds the FleetStage reconciler: it resolves a
// FleetStage's targets, plans its waves and keeps the generated Kargo Stages
// (one per wave, one per target) in step with the spec.
package fleetstages
