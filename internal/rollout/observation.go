// Package rollout decides what a FleetRollout does next. It is pure: the
// reconciler gathers an Observation from the API server (the rollout's plan
// snapshot, its target Promotions, the target Stages, the wave requests and
// approvals), calls Decide with the current time, and applies the Decision.
// Everything the controller knows is rebuilt from the API server on every
// reconcile, so it can die between any two API calls and resume.
package rollout

import (
	"time"

	"k8s.io/apimachinery/pkg/types"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
	"github.com/kargo-fleet/kargo-fleet/internal/policy"
	"github.com/kargo-fleet/kargo-fleet/internal/render"
)

// Observation is everything Decide needs about one rollout.
type Observation struct {
	// Now is the instant of the decision.
	Now time.Time
	// Rollout is the FleetRollout being decided.
	Rollout *fleetv1alpha1.FleetRollout
	// Plan is the rollout's snapshot: the waves and members it works on. For
	// a rollback it holds only the targets to return, in reverse wave order.
	Plan *plan.WavePlan
	// Index is Plan prepared for scheduling under the FleetStage's policy.
	Index *plan.ScheduleIndex
	// FleetStage is the FleetStage's name.
	FleetStage string
	// OnHalt says what happens to running target Promotions on a breach.
	OnHalt fleetv1alpha1.InFlightPolicy
	// RollbackMaxConcurrent, when positive, bounds a rollback's concurrency.
	RollbackMaxConcurrent int
	// RequestedWaves are the waves a wave Stage Promotion asked to run, by
	// wave name. A rollback needs none: it runs every wave of its plan.
	RequestedWaves map[string]bool
	// ApprovedWaves are the waves whose wave Stage the Freight is approved for.
	ApprovedWaves map[string]bool
	// Quorums are the N-person approvals of the waves that require one
	// (spec.waves[].approvals), by wave name.
	Quorums map[string]Quorum
	// ApprovedAt is when the rollout's Freight was approved for each
	// wave's Stage, by wave name, when Kargo recorded the time: an analysis
	// that asks for approval passes on an approval given after it started.
	ApprovedAt map[string]time.Time
	// Analyses are the waves' analyses, by wave name; a wave without one is
	// absent.
	Analyses map[string]*WaveAnalysis
	// RequestPhases are the phases of the wave Stage Promotions that asked
	// for each requested wave, by wave name.
	RequestPhases map[string]kargo.PromotionPhase
	// WavePromoted are the waves whose wave Stage has a Promotion of the
	// rollout's Freight (any phase), or one was just created: kargo-fleet
	// promotes a wave Stage at most once per rollout.
	WavePromoted map[string]bool
	// WaveGaveUp are the waves whose wave Stage Promotions of the rollout's
	// Freight all ended without succeeding (Errored, Failed, Aborted), with
	// the phase of one of them: Kargo will not mark the Freight verified
	// there until someone promotes it again.
	WaveGaveUp map[string]kargo.PromotionPhase
	// WaveErrored are the waves whose newest wave Stage Promotion of the
	// rollout (the one that asked for the wave, or one kargo-fleet made)
	// ended Errored and has no recovery yet: kargo-fleet promotes the wave
	// Stage again (Decision.RecoverWave).
	WaveErrored map[string]ErroredWavePromotion
	// Targets holds what was observed of each member, by target ID. A member
	// missing here has no Promotion of this rollout and no observed Stage.
	Targets map[string]TargetObservation
	// OtherInFlight are targets with a running Promotion of another rollout
	// of the same FleetStage: they count against constraints.
	OtherInFlight []plan.InFlightTarget
	// Expected are targets a Promotion was just created for that the cache
	// does not show yet: they count as in flight, never as pending, so no
	// second Promotion is created for them.
	Expected map[string]bool
	// MaxStarts bounds the target Promotions one decision starts; zero: no
	// bound. The reconciler creates a decision's Promotions before it
	// decides again, so a wave with hundreds of free slots fills them over
	// several decisions, and the wave's counts say what was started.
	MaxStarts int
	// BatchHeldSince is when the rollout's decisions began holding back a
	// batch too small to start (Decision.HeldBatch); zero when none is held.
	BatchHeldSince time.Time
}

// WaveStage returns the name of the wave Stage of the named wave.
func (o *Observation) WaveStage(wave string) string {
	return render.WaveStageName(o.FleetStage, wave)
}

// TargetObservation is what was observed of one member.
type TargetObservation struct {
	// Promotion is the newest target Promotion of this rollout, or nil.
	Promotion *PromotionObservation
	// StageGone says the target's Stage no longer exists (the target left).
	StageGone bool
	// StageUnrecorded says a Stage exists under the target's Stage name
	// that the FleetStage did not record (re-created a moment ago and not
	// recorded yet, or someone else's): the target is not started until
	// its recorded Stage is there.
	StageUnrecorded bool
	// StageName and TakenSince, for a StageUnrecorded target: the Stage
	// name that is taken and since when the controller has seen it taken
	// (zero: not known yet).
	StageName  string
	TakenSince time.Time
	// StageBusy says another Promotion (not of this rollout) is pending or
	// running on the target's Stage.
	StageBusy bool
	// Health is the target Stage's health status (kargo.Health*), if any.
	Health string
	// Verification is the phase of the newest verification of the Freight
	// now on the Stage, when that Freight is the rollout's ("" otherwise or
	// when the Stage does not verify).
	Verification string
	// OnFreight says the Stage currently runs the rollout's Freight.
	OnFreight bool
	// StageUID is the UID of the target's Stage, when it exists.
	StageUID types.UID
	// Recreated names the rollout's Promotion that succeeded into an
	// earlier Stage of the same name: the Stage was deleted and re-created
	// after it, runs nothing of it, and is promoted again (once: the new
	// Promotion is created for StageUID).
	Recreated string
	// RefusedSince is when Kargo first refused to create the target's
	// Promotion (the Freight not available to its Stage), while it has no
	// Promotion; RefusedMessage is Kargo's message.
	RefusedSince   time.Time
	RefusedMessage string
	// Blocked is the FreightPolicies' verdict when they keep the rollout's
	// Freight off the target; nil when they allow it.
	Blocked *policy.Verdict
}

// PromotionObservation is what was observed of a target Promotion.
type PromotionObservation struct {
	// Name is the Promotion's name (given by Kargo).
	Name string
	// Phase is its phase ("" before Kargo picked it up).
	Phase kargo.PromotionPhase
	// Message is Kargo's message.
	Message string
	// CreatedAt is when it was created: the progress deadline runs from here.
	CreatedAt time.Time
	// FinishedAt is when Kargo finished it; zero while it runs.
	FinishedAt time.Time
	// AbortRequested says the abort annotation is already set.
	AbortRequested bool
}
