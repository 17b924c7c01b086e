package rollout

import (
	"cmp"
	"slices"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetrollout"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/render"
)

// People who reach Kargo only through its UI (or the kargo CLI, which asks
// Kargo's API server the same way) have three gestures: Promote Freight
// into a Stage, Approve Freight for a Stage, and Abort a running
// Promotion. Approve already lets a gated wave go on and Promote into the
// first wave Stage already starts a rollout; ReadKargoUIGesture reads the
// other fleet actions out of the same gestures, where the Kargo meaning and
// the fleet meaning agree:
//
//   - Abort of the running wave Promotion stops the wave and undoes
//     nothing: the rollout pauses (no new target starts, running ones
//     finish), which loses nothing and can be resumed.
//   - Promote of a paused rollout's Freight into the wave Stage where it
//     stopped runs that wave again: the rollout resumes.
//   - Abort of a running target Promotion stops a deploy: the rollout is
//     aborted (its running target Promotions are aborted, none starts,
//     nothing is undone).
//   - Promote of the Freight the fleet would roll back to into the first
//     wave Stage puts the earlier Freight back: the fleet rolls back (the
//     targets the last rollout moved return to it, all at once, as
//     `kargo-fleet rollback` does).
//
// The gesture carries Kargo's check of the person's Kargo right (Abort
// needs patch on promotions, Promote needs promote on the Stage); the fleet
// action needs the fleet's rights too (KargoUIReading.Rights), checked as
// the person, never as Kargo's API server.

// KargoUIGesture is what a person did through Kargo's API server.
type KargoUIGesture string

// Gestures kargo-fleet reads as fleet actions.
const (
	// GestureAbortWavePromotion: Abort on a running Promotion into a wave
	// Stage.
	GestureAbortWavePromotion KargoUIGesture = "AbortWavePromotion"
	// GestureAbortTargetPromotion: Abort on a running Promotion into a
	// target Stage, which kargo-fleet created for a rollout.
	GestureAbortTargetPromotion KargoUIGesture = "AbortTargetPromotion"
	// GesturePromoteWaveStage: Promote (or Promote to downstream, which
	// creates one) into a wave Stage.
	GesturePromoteWaveStage KargoUIGesture = "PromoteWaveStage"
)

// FleetAction is the fleet action a gesture means.
type FleetAction string

// Fleet actions.
const (
	// ActionNone: the gesture means what it means in Kargo, nothing more.
	ActionNone     FleetAction = ""
	ActionPause    FleetAction = "Pause"
	ActionResume   FleetAction = "Resume"
	ActionAbort    FleetAction = "Abort"
	ActionRollback FleetAction = "Rollback"
)

// RolloutAtHand is what the reading needs of the FleetRollout a gesture
// concerns: the one its Promotion belongs to, or for a Promote the fleet's
// current rollout.
type RolloutAtHand struct {
	Name      string
	Direction fleetv1alpha1.RolloutDirection
	Phase     fleetv1alpha1.RolloutPhase
	Intent    fleetv1alpha1.RolloutIntent
	Freight   string
	// Wave is the wave the rollout stands at (running, paused or waiting).
	Wave string
}

// Verb names the action in a sentence: "pause", "roll back".
func (a FleetAction) Verb() string {
	if a == ActionRollback {
		return "roll back"
	}
	return strings.ToLower(string(a))
}

// KargoUIRequest is one gesture and what it touches.
type KargoUIRequest struct {
	Gesture KargoUIGesture
	// Rollout is nil when the gesture concerns no rollout.
	Rollout *RolloutAtHand
	// Freight and Wave are the Promotion's Freight and its Stage's wave
	// (GesturePromoteWaveStage); FirstWave says the Stage is the first
	// wave Stage.
	Freight, Wave string
	FirstWave     bool
	// RollbackFreight is the Freight a rollback of the fleet would return
	// the moved targets to now (PlanRollback's default); "" when there is
	// nothing to roll back.
	RollbackFreight string
}

// KargoUIReading is the fleet action a gesture means.
type KargoUIReading struct {
	Action FleetAction
	// Rollout is the FleetRollout the action changes (Pause, Resume,
	// Abort) or rolls back (Rollback).
	Rollout string
}

// Rights are what the person must hold in the Project for the action: what
// the same action through the CLI needs (kargo-fleet pause, resume and
// abort patch the FleetRollout, kargo-fleet rollback creates one), and, as
// the FleetRollout webhook asks of those, Kargo's promote on every wave
// Stage of the fleet.
func (r KargoUIReading) Rights(namespace string, fs *fleetv1alpha1.FleetStage) []authorizationv1.ResourceAttributes {
	if r.Action == ActionNone {
		return nil
	}
	fleet := authorizationv1.ResourceAttributes{Namespace: namespace, Group: fleetv1alpha1.GroupVersion.Group,
		Resource: "fleetrollouts", Verb: "patch", Name: r.Rollout}
	if r.Action == ActionRollback {
		fleet.Verb, fleet.Name = "create", ""
	}
	rights := []authorizationv1.ResourceAttributes{fleet}
	for _, w := range fs.Spec.Waves {
		rights = append(rights, authorizationv1.ResourceAttributes{Namespace: namespace, Group: kargo.GroupVersion.Group,
			Resource: "stages", Verb: kargo.PromoteVerb, Name: render.WaveStageName(fs.Name, w.Name)})
	}
	return rights
}

// ReadKargoUIGesture says which fleet action, if any, a gesture means.
func ReadKargoUIGesture(r KargoUIRequest) KargoUIReading {
	ro := r.Rollout
	forward := ro != nil && ro.Direction != fleetv1alpha1.DirectionRollback && !ro.Phase.IsFinal()
	change := func(a FleetAction) KargoUIReading { return KargoUIReading{Action: a, Rollout: ro.Name} }
	switch r.Gesture {
	case GestureAbortWavePromotion:
		if forward && ro.Intent != fleetv1alpha1.IntentPause && ro.Intent != fleetv1alpha1.IntentAbort {
			return change(ActionPause)
		}
	case GestureAbortTargetPromotion:
		if forward && ro.Intent != fleetv1alpha1.IntentAbort {
			return change(ActionAbort)
		}
	case GesturePromoteWaveStage:
		if forward && ro.Intent == fleetv1alpha1.IntentPause && r.Freight == ro.Freight && r.Wave == ro.Wave {
			return change(ActionResume)
		}
		if r.FirstWave && r.RollbackFreight != "" && r.Freight == r.RollbackFreight && ro != nil && ro.Freight != r.Freight {
			return KargoUIReading{Action: ActionRollback, Rollout: ro.Name}
		}
	}
	return KargoUIReading{}
}

// AtHand reads what ReadKargoUIGesture needs of a FleetRollout; nil for
// nil.
func AtHand(ro *fleetv1alpha1.FleetRollout) *RolloutAtHand {
	if ro == nil {
		return nil
	}
	return &RolloutAtHand{Name: ro.Name, Direction: ro.Spec.Direction, Phase: ro.Status.Phase,
		Intent: cmp.Or(ro.Spec.Intent, fleetv1alpha1.IntentRun), Freight: ro.Spec.Freight.Name, Wave: StandingWave(ro)}
}

// StandingWave is the wave a rollout stands at: the first that has not
// passed (running, waiting, halted or not started yet), else the last.
func StandingWave(ro *fleetv1alpha1.FleetRollout) string {
	waves := ro.Status.Waves
	for _, w := range waves {
		if w.Phase != fleetv1alpha1.WaveSucceeded && w.Phase != fleetv1alpha1.WaveSkipped {
			return w.Name
		}
	}
	if len(waves) == 0 {
		return ""
	}
	return waves[len(waves)-1].Name
}

// GestureRequest gathers what ReadKargoUIGesture needs for a gesture on
// Promotion p of a Stage with role in fs, given the FleetStage's
// rollouts; false when the gesture concerns no fleet action's object (an
// abort of a Promotion that is neither a wave Promotion nor one of a
// rollout's target Promotions).
func GestureRequest(fs *fleetv1alpha1.FleetStage, rollouts []*fleetv1alpha1.FleetRollout, role FleetStageRole,
	gesture KargoUIGesture, p *kargo.Promotion) (KargoUIRequest, bool) {
	in := KargoUIRequest{Gesture: gesture, Freight: p.Spec.Freight}
	switch {
	case gesture == GesturePromoteWaveStage && role == StageWave && p.Labels[fleetv1alpha1.WavePromotionLabel] == "" &&
		!recordedByAny(rollouts, p.Name):
		// A wave Promotion kargo-fleet made (the label names its rollout)
		// is the rollout's own doing, never a person's gesture; nor is one a
		// rollout already records (it started the rollout, or asked for a
		// wave), whose step is called again and again while it runs.
		in.Wave = waveOfStage(fs, p.Spec.Stage)
		in.FirstWave = in.Wave == fs.Spec.Waves[0].Name
		in.Rollout = AtHand(openForward(rollouts, p.Spec.Freight))
		if in.Rollout == nil || in.Rollout.Intent != fleetv1alpha1.IntentPause {
			plan := PlanRollback(RollbackRequest{Asker: AskedByStep, FleetStage: fs, Rollouts: rollouts})
			if plan.Refused == nil && plan.Existing == nil && plan.Of != nil {
				in.Rollout, in.RollbackFreight = AtHand(plan.Of), plan.Freight.Name
			}
		}
	case gesture == GestureAbortWavePromotion && role == StageWave:
		in.Wave = waveOfStage(fs, p.Spec.Stage)
		in.Rollout = AtHand(openForward(rollouts, p.Spec.Freight))
	case gesture == GestureAbortWavePromotion && role == StageTarget &&
		p.Labels[fleetv1alpha1.RolloutLabel] != "":
		in.Gesture = GestureAbortTargetPromotion
		for _, ro := range rollouts {
			if ro.Name == p.Labels[fleetv1alpha1.RolloutLabel] {
				in.Rollout = AtHand(ro)
			}
		}
	default:
		return in, false
	}
	return in, true
}

// RollbackStartedBy is the rollback a Promotion started (its step key names
// the Promotion), or nil: the Promotion was a Kargo UI rollback gesture, and
// every later run of its step reports that rollback.
func RollbackStartedBy(rollouts []*fleetv1alpha1.FleetRollout, promotion string) *fleetv1alpha1.FleetRollout {
	for _, ro := range rollouts {
		if ro.Spec.Direction != fleetv1alpha1.DirectionRollback {
			continue
		}
		if by, _, ok := fleetrollout.ParseStepKey(ro.Annotations[fleetv1alpha1.StepKeyAnnotation]); ok && by == promotion {
			return ro
		}
	}
	return nil
}

// recordedByAny says whether one of rollouts was created by the Promotion
// or records it as a wave's request.
func recordedByAny(rollouts []*fleetv1alpha1.FleetRollout, promotion string) bool {
	for _, ro := range rollouts {
		if by, _, ok := fleetrollout.ParseStepKey(ro.Annotations[fleetv1alpha1.StepKeyAnnotation]); ok && by == promotion {
			return true
		}
		for _, requested := range fleetrollout.WaveRequests(ro) {
			if requested == promotion {
				return true
			}
		}
	}
	return false
}

// openForward is the unfinished forward rollout of freight, if any.
func openForward(rollouts []*fleetv1alpha1.FleetRollout, freight string) *fleetv1alpha1.FleetRollout {
	for _, ro := range rollouts {
		if ro.Spec.Direction != fleetv1alpha1.DirectionRollback && ro.Spec.Freight.Name == freight && !ro.Status.Phase.IsFinal() {
			return ro
		}
	}
	return nil
}

func waveOfStage(fs *fleetv1alpha1.FleetStage, stage string) string {
	for _, w := range fs.Spec.Waves {
		if render.WaveStageName(fs.Name, w.Name) == stage {
			return w.Name
		}
	}
	return ""
}

// AbortedPromotion is a Promotion of a rollout with an abort request.
type AbortedPromotion struct {
	Gesture   KargoUIGesture
	Promotion string
	// Actor is who asked, as Kargo's webhook recorded it.
	Actor string
}

// noteAbort records p when someone asked Kargo to abort it and it counts
// for the rollout.
func (o *Observed) noteAbort(p *kargo.Promotion, g KargoUIGesture, counts bool) {
	if r, ok := kargo.AbortRequestOf(p.Annotations); ok && counts {
		o.Aborted = append(o.Aborted, AbortedPromotion{Gesture: g, Promotion: p.Name, Actor: r.Actor})
	}
}

// AbortGesture is an abort a person asked for on one of a rollout's
// Promotions, read as the fleet action it means.
type AbortGesture struct {
	AbortedPromotion
	Reading KargoUIReading
}

// AbortGestures reads the rollout's aborted Promotions as gestures: those
// kargo-fleet did not ask for itself (self is the actor its own aborts
// carry) that mean a fleet action now. The first wave Promotion's, then the
// target Promotions', in observation order; each means the same action, so
// the caller carries out the first one whose person holds the rights.
func AbortGestures(ro *fleetv1alpha1.FleetRollout, aborted []AbortedPromotion, self string) []AbortGesture {
	at := AtHand(ro)
	var out []AbortGesture
	for _, a := range aborted {
		if a.Actor == self {
			continue
		}
		r := ReadKargoUIGesture(KargoUIRequest{Gesture: a.Gesture, Rollout: at})
		if r.Action != ActionNone {
			out = append(out, AbortGesture{AbortedPromotion: a, Reading: r})
		}
	}
	slices.SortStableFunc(out, func(x, y AbortGesture) int {
		return cmp.Compare(gestureRank(x.Gesture), gestureRank(y.Gesture))
	})
	return out
}

func gestureRank(g KargoUIGesture) int {
	if g == GestureAbortWavePromotion {
		return 0
	}
	return 1
}
