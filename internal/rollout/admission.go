package rollout

import (
	"fmt"
	"strings"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/render"
)

// FleetStageRole says what a Kargo Stage is to a fleet, for the admission of
// Promotions into it.
type FleetStageRole string

// Roles of a Stage in a fleet.
const (
	// StageNotInFleet: the Stage belongs to no FleetStage; its Promotions are
	// Kargo's business only.
	StageNotInFleet FleetStageRole = ""
	// StageTemplate: the adopted Stage, whose promotion template the
	// controller copies into every target Stage. It is never promoted.
	StageTemplate FleetStageRole = "Template"
	// StageWave: a wave Stage; its fleet-wave step runs the wave.
	StageWave FleetStageRole = "Wave"
	// StageTarget: a target Stage, one per target.
	StageTarget FleetStageRole = "Target"
)

// BreakGlassVerb is the custom RBAC verb on fleetstages that lets a user
// promote one target Stage of that fleet directly (break-glass). No role the
// chart aggregates into Kubernetes' default roles grants it.
const BreakGlassVerb = "break-glass"

// PromotionAdmission is what the admission guard knows of a Promotion being
// created in a Project that holds a FleetStage.
type PromotionAdmission struct {
	// Project, FleetStage, Stage and Freight name the Project, the fleet
	// the Stage belongs to, the Stage and the Freight.
	Project, FleetStage, Stage, Freight string
	// Role is the Stage's role in the fleet.
	Role FleetStageRole
	// FirstWaveStage is the fleet's first wave Stage: promoting Freight
	// there starts a rollout.
	FirstWaveStage string
	// User is the Kubernetes user creating the Promotion (the admission
	// request's): kargo-fleet's controller, a person or tool, or Kargo's
	// control plane (its API server acting for a UI or CLI user, its
	// controller auto-promoting).
	User string
	// Actor is Kargo's create-actor annotation: the person behind a request
	// of Kargo's API server; informative only, never trusted.
	Actor string
	// FromController says User is kargo-fleet's controller.
	FromController bool
	// ControllerDecision names the kargo-fleet decision the Promotion carries
	// out, from its labels ("FleetRollout x", "drift revert", …); empty when
	// none.
	ControllerDecision string
	// DecisionOpen says the decision still stands (its rollout exists and is
	// not final).
	DecisionOpen bool
	// HeldBackBy names the FleetRollout that breached a failure threshold
	// with the Freight, when the Freight is held back from the fleet.
	HeldBackBy string
	// BreakGlassReason is the Promotion's BreakGlassReasonAnnotation.
	BreakGlassReason string
	// BreakGlassAllowed says User holds BreakGlassVerb on the FleetStage.
	BreakGlassAllowed bool
	// PolicyBlocks says which FreightPolicy rules keep the Freight off the
	// target ("" when none does); PolicyAllowsBreakGlass says every one of
	// them lets break-glass through.
	PolicyBlocks           string
	PolicyAllowsBreakGlass bool
	// ActsForOthers says User creates Promotions on behalf of other people
	// (Kargo's API server for every Kargo UI and CLI user, Kargo's
	// controllers), or the Promotion names an actor other than User: a right
	// such an identity holds is not the right of the person behind it.
	ActsForOthers bool
	// BreakGlassLabel is the Promotion's BreakGlassLabel: the fleet a
	// break-glass Promotion names.
	BreakGlassLabel string
	// GuardOff says an administrator turned the admission guard off for the
	// Project (PromotionGuardLabel other than enforce): only the post-hoc
	// target guard judges its Promotions, and it leaves a person's or a
	// tool's Promotion into one target alone (see LeftToPeople).
	GuardOff bool
}

// AdmissionVerdict is the guard's answer.
type AdmissionVerdict struct {
	// Allowed admits the Promotion.
	Allowed bool
	// BreakGlass says it was admitted as a break-glass Promotion: intended,
	// recorded, and not drift.
	BreakGlass bool
	// Message says why it was refused, and what works instead; Kargo's UI
	// shows it in its error toast.
	Message string
}

// JudgePromotionAdmission decides whether a Promotion may be created. Only
// kargo-fleet's controller, carrying out an open rollout, a rollback or a
// drift revert, promotes target Stages: Kargo's Promote, "Promote to
// downstream", "Instant promote", `kargo promote` and auto-promotion would
// otherwise skip the fleet's waves, thresholds, approval gates and
// concurrency limits. A user holding the break-glass right may promote one
// target, giving a reason. The adopted template Stage is never promoted.
// Freight a FreightPolicy keeps off a target enters its Stage from nowhere,
// unless every blocking rule allows break-glass and it is break-glass.
// Freight held back after a breach enters no fleet Stage. Wave Stages take
// any other Promotion: their fleet-wave step enforces wave order and gates.
//
// It is the one rule of both guards: the admission guard asks it before a
// Promotion is created (AdmissionOfRequest), the post-hoc target guard
// after the fact, from what the Promotion records (AdmissionOfRecord), and
// adds only its remedy (JudgeForeignPromotion). Where an administrator
// turned the admission guard off (GuardOff), a person's or a tool's
// Promotion into one target is left to them (LeftToPeople).
func JudgePromotionAdmission(a PromotionAdmission) AdmissionVerdict {
	if v := judgeEnforced(a); v.Allowed || !a.LeftToPeople() {
		return v
	}
	return AdmissionVerdict{Allowed: true}
}

// judgeEnforced is the rule where the admission guard enforces it: who
// may promote, then the break-glass label a break-glass Promotion carries
// and no other does.
func judgeEnforced(a PromotionAdmission) AdmissionVerdict {
	v := judgeAdmission(a)
	switch {
	case v.Allowed && !v.BreakGlass && a.BreakGlassLabel != "":
		return refuseAdmission(fmt.Sprintf("the %s label marks a break-glass Promotion into a target Stage, with the %s "+
			"annotation; Stage %q is not a target Stage", fleetv1alpha1.BreakGlassLabel,
			fleetv1alpha1.BreakGlassReasonAnnotation, a.Stage))
	case v.BreakGlass && a.BreakGlassLabel != a.FleetStage:
		return refuseAdmission(fmt.Sprintf("a break-glass Promotion into target Stage %q carries the label %s=%s "+
			"(kargo-fleet break-glass sets it), so the fleet records it as intended", a.Stage,
			fleetv1alpha1.BreakGlassLabel, a.FleetStage))
	}
	return v
}

// LeftToPeople says the Promotion is one the rule leaves to people where
// the admission guard is off for the Project: a person's or a tool's (it
// names a create-actor; Kargo's auto-promotion names none) into one target
// Stage, not from kargo-fleet's controller, of Freight neither held back
// nor kept off the target by a FreightPolicy.
func (a PromotionAdmission) LeftToPeople() bool {
	return a.GuardOff && a.Role == StageTarget && a.Actor != "" && !a.FromController && a.HeldBackBy == "" &&
		a.PolicyBlocks == ""
}

// NeedsBreakGlassReview says whether the rule depends on the creator's
// break-glass right (BreakGlassAllowed): a break-glass reason into a target
// Stage from someone other than kargo-fleet's controller who acts for
// nobody else. Only then do the guards ask the API server.
func (a PromotionAdmission) NeedsBreakGlassReview() bool {
	return a.Role == StageTarget && a.BreakGlassReason != "" && !a.FromController && !a.ActsForOthers
}

// judgeAdmission says who may promote.
func judgeAdmission(a PromotionAdmission) AdmissionVerdict {
	switch {
	case a.Role == StageNotInFleet:
		return AdmissionVerdict{Allowed: true}
	case a.Role == StageTemplate:
		return refuseAdmission(fmt.Sprintf("Stage %q is the template of fleet %q: its promotion template runs on every target "+
			"Stage with that target's variables, and the Stage itself is never promoted. %s", a.Stage, a.FleetStage, a.startHint()))
	case a.HeldBackBy != "" && !a.FromController:
		return refuseAdmission(fmt.Sprintf("Freight %s is held back from fleet %q: FleetRollout %s breached a failure threshold with it. "+
			"To promote it to the fleet again on purpose: kubectl annotate fleetstage %s -n %s %s=%s --overwrite, then %s",
			a.Freight, a.FleetStage, a.HeldBackBy, a.FleetStage, a.Project, fleetv1alpha1.RetryFreightAnnotation, a.Freight,
			a.promoteCommand()))
	case a.Role == StageWave:
		return AdmissionVerdict{Allowed: true}
	case a.policyRefuses():
		// From anyone, kargo-fleet's own controller included. Break-glass
		// passes only rules that allow it, and then only as break-glass
		// (judged below).
		msg := fmt.Sprintf("Freight %s may not run on target Stage %q of fleet %q: %s", a.Freight, a.Stage, a.FleetStage, a.PolicyBlocks)
		if a.BreakGlassReason != "" && !a.FromController {
			msg += ". Break-glass does not pass it: every rule that blocks it would have to say allowBreakGlass: true"
		}
		return refuseAdmission(msg)
	case a.FromController && a.ControllerDecision != "" && a.DecisionOpen:
		return AdmissionVerdict{Allowed: true}
	case a.FromController:
		return refuseAdmission(fmt.Sprintf("kargo-fleet promotes target Stage %q of fleet %q only for an open rollout, rollback or "+
			"drift revert; %s", a.Stage, a.FleetStage, describeDecision(a.ControllerDecision)))
	case a.BreakGlassReason != "" && a.ActsForOthers:
		return refuseAdmission(fmt.Sprintf("break-glass into target Stage %q of fleet %q is refused from %q: it creates "+
			"Promotions for other people (Kargo's API server acts for every Kargo UI and CLI user), so whatever right it "+
			"holds is not theirs, and no grant to it counts. Break glass with your own identity: kargo-fleet break-glass %s "+
			"-n %s --stage %s --freight %s --reason \"…\"", a.Stage, a.FleetStage, a.User,
			a.FleetStage, a.Project, a.Stage, a.Freight))
	case a.BreakGlassReason != "" && a.BreakGlassAllowed:
		return AdmissionVerdict{Allowed: true, BreakGlass: true}
	case a.BreakGlassReason != "":
		return refuseAdmission(fmt.Sprintf("user %q may not break glass on fleet %q: it needs the verb %q on "+
			"fleetstages.fleet.kargo-fleet.io %q in namespace %q (the chart's ClusterRole kargo-fleet-break-glass, bound "+
			"in that namespace). %s", a.User, a.FleetStage, BreakGlassVerb, a.FleetStage, a.Project, a.startHint()))
	}
	return refuseAdmission(fmt.Sprintf("Stage %q is a target of fleet %q%s: only kargo-fleet promotes its targets, wave by wave, "+
		"so Promote, Promote to downstream, Instant promote, kargo promote and auto-promotion are refused here. %s "+
		"A wave waiting for approval goes on with: kargo approve --project %s --freight %s --stage <wave Stage>. "+
		"Follow it with: kargo-fleet status %s -n %s. In an incident, a user with the break-glass right promotes this "+
		"one target with: kargo-fleet break-glass %s -n %s --stage %s --freight %s --reason \"…\"",
		a.Stage, a.FleetStage, a.by(), a.startHint(), a.Project, a.Freight, a.FleetStage, a.Project,
		a.FleetStage, a.Project, a.Stage, a.Freight))
}

// policyRefuses says a FreightPolicy keeps the Freight off the target and
// this Promotion may not pass it: break-glass passes only rules that allow
// it, and kargo-fleet's own controller never breaks glass.
func (a PromotionAdmission) policyRefuses() bool {
	return a.PolicyBlocks != "" && (!a.PolicyAllowsBreakGlass || a.BreakGlassReason == "" || a.FromController)
}

func refuseAdmission(msg string) AdmissionVerdict {
	return AdmissionVerdict{Message: "kargo-fleet: " + msg}
}

// startHint says how Freight enters the fleet.
func (a PromotionAdmission) startHint() string {
	return "To promote Freight to the fleet, promote it into its first wave Stage: " + a.promoteCommand() + "."
}

func (a PromotionAdmission) promoteCommand() string {
	return fmt.Sprintf("kargo promote --project %s --stage %s --freight %s", a.Project, a.FirstWaveStage, a.Freight)
}

// by names who asked, as far as the request says: the user, and the actor
// Kargo's API server recorded for it.
func (a PromotionAdmission) by() string {
	switch {
	case a.Actor != "" && a.User == "":
		return fmt.Sprintf(" (asked by %s)", a.Actor)
	case a.Actor != "" && strings.TrimPrefix(a.Actor, "kubernetes:") != a.User:
		return fmt.Sprintf(" (asked by %s through %s)", a.Actor, a.User)
	case a.User != "":
		return fmt.Sprintf(" (asked by %s)", a.User)
	}
	return ""
}

func describeDecision(d string) string {
	if d == "" {
		return "this Promotion names none (no rollout, drift revert or undo label)"
	}
	return d + " is not open"
}

// StageRoleIn finds the fleet a Stage belongs to among a Project's
// FleetStages, and its role there, by the Stage's name: the adopted Stage
// (spec.stage.fromStage), a wave Stage (render.WaveStageName) or a target
// Stage (render.TargetStageName starts with "<fleetstage>."). nil when the
// Stage belongs to none.
func StageRoleIn(fleets []fleetv1alpha1.FleetStage, stage string) (*fleetv1alpha1.FleetStage, FleetStageRole) {
	for i := range fleets {
		fs := &fleets[i]
		if len(fs.Spec.Waves) == 0 {
			continue
		}
		if fs.Spec.Stage.FromStage == stage {
			return fs, StageTemplate
		}
		if strings.HasPrefix(stage, fs.Name+".") {
			return fs, StageTarget
		}
		for _, w := range fs.Spec.Waves {
			if render.WaveStageName(fs.Name, w.Name) == stage {
				return fs, StageWave
			}
		}
	}
	return nil, StageNotInFleet
}
