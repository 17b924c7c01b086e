package drift

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetrollout"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// MaxExamples bounds the drifted targets named in a FleetStage's status.
const MaxExamples = 10

// Target is one target Stage as drift detection sees it.
type Target struct {
	// Name is the target's name.
	Name string
	// Stage is the target Stage's name.
	Stage string
	// Freight names the Freight the Stage runs, one per origin; empty when
	// it runs none yet.
	Freight []string
}

// Intent is what the fleet means its targets to run.
type Intent struct {
	// Freight is the Freight every target should run: the last good
	// Freight, or, before there is one, the Freight of the newest open
	// forward rollout. Empty: the fleet intends nothing yet, and no target
	// is drifted.
	Freight string
	// Explained are the Freight open rollouts have put, or are putting, on
	// targets: each open rollout's Freight and, for an open rollback, the
	// Freight it rolls back.
	Explained []string
	// BreakGlass maps a target Stage to the Freight of its newest
	// break-glass Promotion (BreakGlassOf): a user with the break-glass
	// right put it there on purpose, so a target running it is not drifted.
	BreakGlass map[string]string
}

// IntentOf returns the intent of a FleetStage from its status (last good
// Freight, current rollout) and its rollouts (any order; final ones only
// help find what an open rollback undoes). A rollout still recorded as the
// FleetStage's current one counts as open even when final: the rollout
// controller records its end, and the last good Freight, in one later
// write, and between the two its targets are not drifted.
func IntentOf(st *fleetv1alpha1.FleetStageStatus, rollouts []*fleetv1alpha1.FleetRollout) Intent {
	var in Intent
	if st.LastGoodFreight != nil {
		in.Freight = st.LastGoodFreight.Name
	}
	byName := make(map[string]*fleetv1alpha1.FleetRollout, len(rollouts))
	for _, ro := range rollouts {
		byName[ro.Name] = ro
	}
	var newestForward *fleetv1alpha1.FleetRollout
	for _, ro := range rollouts {
		if (ro.Status.Phase.IsFinal() || ro.DeletionTimestamp != nil) && ro.Name != st.CurrentRollout {
			continue
		}
		in.Explained = append(in.Explained, ro.Spec.Freight.Name)
		if undone := byName[ro.Spec.RollbackOf]; ro.Spec.RollbackOf != "" && undone != nil {
			in.Explained = append(in.Explained, undone.Spec.Freight.Name)
		}
		if ro.Spec.Direction != fleetv1alpha1.DirectionRollback &&
			(newestForward == nil || fleetrollout.Compare(ro, newestForward) > 0) {
			newestForward = ro
		}
	}
	if in.Freight == "" && newestForward != nil {
		in.Freight = newestForward.Spec.Freight.Name
	}
	slices.Sort(in.Explained)
	in.Explained = slices.Compact(in.Explained)
	return in
}

// BreakGlassOf maps each target Stage to the Freight of its newest
// break-glass Promotion among promos (a FleetStage's, selected by
// fleetv1alpha1.BreakGlassLabel). Kargo names a Promotion
// "<stage>.<ulid>.<freight>", so within a Stage the greatest name is the
// newest.
func BreakGlassOf(promos []kargo.Promotion) map[string]string {
	newest := map[string]string{}
	out := map[string]string{}
	for i := range promos {
		p := &promos[i]
		if p.Name > newest[p.Spec.Stage] {
			newest[p.Spec.Stage], out[p.Spec.Stage] = p.Name, p.Spec.Freight
		}
	}
	return out
}

// Drift is one drifted target.
type Drift struct {
	// Target and Stage name the target and its Stage.
	Target, Stage string
	// Freight is the Freight the target runs ("+"-joined across origins).
	Freight string
	// Intended is the Freight the fleet intends it to run.
	Intended string
	// Application, when set, is the drift of the target's Argo CD
	// Application (ApplicationDrift.Key): the Stage runs the intended
	// Freight, the cluster does not.
	Application string
}

// Key identifies the drift: the same target drifted to the same Freight
// away from the same intended Freight, or its Application showing the same
// change. It is a label-safe hash.
func (d Drift) Key() string {
	msg := d.Stage + "\x00" + d.Freight + "\x00" + d.Intended
	if d.Application != "" {
		msg += "\x00" + d.Application
	}
	sum := sha256.Sum256([]byte(msg))
	return hex.EncodeToString(sum[:])[:40]
}

// Detect returns the drifted targets, by target name. A target is drifted
// when it runs Freight and none of it is the intended Freight or Freight an
// open rollout explains. Targets running nothing yet are not drifted: the
// next rollout reaches them.
func Detect(in Intent, targets []Target) []Drift {
	if in.Freight == "" {
		return nil
	}
	var out []Drift
	for i := range targets {
		t := &targets[i]
		if len(t.Freight) == 0 || explained(in, t.Freight) || slices.Contains(t.Freight, in.BreakGlass[t.Stage]) {
			continue
		}
		out = append(out, Drift{Target: t.Name, Stage: t.Stage, Freight: strings.Join(t.Freight, "+"), Intended: in.Freight})
	}
	slices.SortFunc(out, func(a, b Drift) int { return cmp.Or(cmp.Compare(a.Target, b.Target), cmp.Compare(a.Stage, b.Stage)) })
	return out
}

// explained reports whether one of the Freight is intended or explained.
// Explained is short (one entry per open rollout), so a linear scan beats a
// map per call.
func explained(in Intent, freight []string) bool {
	for _, f := range freight {
		if f == in.Freight || slices.Contains(in.Explained, f) {
			return true
		}
	}
	return false
}

// Status returns the FleetStage status summary of drifts: the count and
// the first MaxExamples; nil when there is no drift.
func Status(drifts []Drift) *fleetv1alpha1.DriftStatus {
	if len(drifts) == 0 {
		return nil
	}
	st := &fleetv1alpha1.DriftStatus{Count: int32(min(len(drifts), 1<<31-1))} //nolint:gosec // bounded above
	for _, d := range drifts[:min(len(drifts), MaxExamples)] {
		st.Examples = append(st.Examples, fleetv1alpha1.DriftedTarget{
			Target: d.Target, Stage: d.Stage, Freight: d.Freight, IntendedFreight: d.Intended,
		})
	}
	return st
}

// Newly returns the drifts whose key is not in seen, in order.
func Newly(seen map[string]bool, drifts []Drift) []Drift {
	var out []Drift
	for _, d := range drifts {
		if !seen[d.Key()] {
			out = append(out, d)
		}
	}
	return out
}

// TargetsOf returns target Stages as drift detection sees them.
func TargetsOf(stages []kargo.Stage) []Target {
	out := make([]Target, len(stages))
	for i := range stages {
		st := &stages[i]
		out[i] = Target{Name: cmp.Or(st.Annotations[fleetv1alpha1.TargetNameAnnotation], st.Labels[fleetv1alpha1.TargetLabel]),
			Stage: st.Name, Freight: st.CurrentFreightNames()}
	}
	return out
}

// DriftedStages returns the names of the drifted target Stages of a
// FleetStage, for views that mark them; breakGlass is Intent.BreakGlass
// (BreakGlassOf the FleetStage's break-glass Promotions).
func DriftedStages(fs *fleetv1alpha1.FleetStage, rollouts []fleetv1alpha1.FleetRollout, stages []kargo.Stage,
	breakGlass map[string]string) map[string]bool {
	ptrs := make([]*fleetv1alpha1.FleetRollout, len(rollouts))
	for i := range rollouts {
		ptrs[i] = &rollouts[i]
	}
	intent := IntentOf(&fs.Status, ptrs)
	intent.BreakGlass = breakGlass
	out := map[string]bool{}
	for _, d := range Detect(intent, TargetsOf(stages)) {
		out[d.Stage] = true
	}
	return out
}
