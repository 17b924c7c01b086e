// Package render turns a FleetStage and its WavePlan into the Kargo Stages
// that carry it: one wave Stage per wave and one target Stage per target. It
// is pure: the same input gives the same Stages, so the reconciler can compare
// them with what exists and write only what differs.
//
// Freight flows through the generated Stages like this (three waves, adopted
// Stage sourcing from "staging"):
//
//	staging ──> prod-pilot ──> prod-canary ──> prod-general
//	   │             │               │
//	   └─> pilot     └─> canary      └─> general
//	       targets       targets         targets
//
// A wave Stage takes Freight from the previous wave Stage (the first from the
// adopted Stage's sources), after the previous wave's soak. A target Stage
// takes Freight from the same place as its wave Stage, so Kargo itself refuses
// to put Freight on a target before the previous wave passed with it — without
// any per-target write — and a rollback Freight, verified there earlier, stays
// available.
package render
