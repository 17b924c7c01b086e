package plan

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

// Planner is a FleetStage spec compiled for planning. It is immutable and
// safe for concurrent use; build it with Compile.
type Planner struct {
	selection     targetSelector
	excludeLabels []string
	waves         []compiledWave
	policy        *CompiledPolicy
	// shards resolves target shards; nil when spec.shards is unset.
	shards *shardResolver
}

// Policy returns the compiled spec.policy, for NewScheduleIndex.
func (p *Planner) Policy() *CompiledPolicy {
	return p.policy
}

// PlanInput is the snapshot a plan is computed from.
type PlanInput struct {
	// Seed personalises the hash order of count-capped waves; use the
	// FleetStage's "<namespace>/<name>" so two FleetStages over the same fleet
	// pick different pilots, while recreating a FleetStage keeps its order.
	Seed string
	// Candidates are the targets every source returned, in any order.
	Candidates []Target
	// AllowedTeams scopes the selection to targets whose TeamLabel is in the
	// set; nil means no scoping.
	AllowedTeams TeamSet
}

// ExclusionReason says why a candidate target is not in the fleet.
type ExclusionReason string

// Exclusion reasons.
const (
	// ExclusionInvalidTarget: the target has no ID.
	ExclusionInvalidTarget ExclusionReason = "InvalidTarget"
	// ExclusionDuplicateTarget: several sources returned different targets
	// with this ID; none of them is promoted until the inventory is fixed,
	// because promoting the wrong one (wrong server, wrong params) is worse.
	ExclusionDuplicateTarget ExclusionReason = "DuplicateTarget"
	// ExclusionExpressionError: the selection expression failed on the target.
	ExclusionExpressionError ExclusionReason = "ExpressionError"
	// ExclusionTeamLabelMissing: team scoping is on and the target has no team.
	ExclusionTeamLabelMissing ExclusionReason = "TeamLabelMissing"
	// ExclusionTeamNotAllowed: the target's team is not allowed for the Project.
	ExclusionTeamNotAllowed ExclusionReason = "TeamNotAllowed"
	// ExclusionLabel: the target carries one of the exclusion labels.
	ExclusionLabel ExclusionReason = "ExcludeLabel"
)

// ExcludedTarget is a candidate the selection matched (or could not judge)
// but that is kept out of the fleet.
type ExcludedTarget struct {
	// Target is the excluded target.
	Target Target `json:"target"`
	// Reason is the typed reason.
	Reason ExclusionReason `json:"reason"`
	// Message explains the reason for this target.
	Message string `json:"message"`
}

// EvaluationError records a wave expression that failed on a target; the
// target then does not match that wave.
type EvaluationError struct {
	// Field is the expression's path, e.g. spec.waves[1].expression.
	Field string `json:"field"`
	// TargetID is the target the expression failed on.
	TargetID string `json:"targetID"`
	// Message is the evaluation error.
	Message string `json:"message"`
}

// WavePlan is the result of planning: every candidate is either in a wave,
// unassigned, excluded (with a reason) or not selected (counted).
type WavePlan struct {
	// Hash identifies the plan: see PlanHash.
	Hash string `json:"planHash"`
	// Waves are the waves in promotion order.
	Waves []PlannedWave `json:"waves"`
	// Unassigned are selected targets no wave took, in hash order. They are
	// not promoted; they are reported so that nobody is dropped silently.
	Unassigned []Target `json:"unassigned,omitempty"`
	// Excluded are the targets kept out of the fleet, sorted by ID.
	Excluded []ExcludedTarget `json:"excluded,omitempty"`
	// Candidates is the number of targets the sources returned, after merging
	// identical copies of one target read through overlapping sources.
	Candidates int `json:"candidates"`
	// NotSelected is the number of candidates the selector did not match.
	NotSelected int `json:"notSelected"`
	// FleetMaxFailures is the fleet-wide failure allowance resolved against
	// every wave member; nil when spec.policy.maxFailures is unset.
	FleetMaxFailures *int `json:"fleetMaxFailures,omitempty"`
	// EvaluationErrors lists wave expressions that failed on a target.
	EvaluationErrors []EvaluationError `json:"evaluationErrors,omitempty"`
}

// Selected is the number of targets in the fleet: wave members plus
// unassigned targets.
func (p *WavePlan) Selected() int {
	return p.Members() + len(p.Unassigned)
}

// Members is the number of targets in some wave.
func (p *WavePlan) Members() int {
	n := 0
	for i := range p.Waves {
		n += len(p.Waves[i].Members)
	}
	return n
}

// Wave returns the wave named name and its index, or -1.
func (p *WavePlan) Wave(name string) (*PlannedWave, int) {
	for i := range p.Waves {
		if p.Waves[i].Name == name {
			return &p.Waves[i], i
		}
	}
	return nil, -1
}

// Plan compiles spec and plans in. It returns an *InvalidSpecError when the
// spec is invalid. Callers planning repeatedly compile once and call
// Planner.Plan.
func Plan(spec *fleetv1alpha1.FleetStageSpec, in PlanInput) (*WavePlan, error) {
	p, errs := Compile(spec)
	if len(errs) > 0 {
		return nil, &InvalidSpecError{Errors: errs}
	}
	return p.Plan(in), nil
}

// Plan selects the fleet from in.Candidates and assigns it to waves. It is
// deterministic: the same spec and input, in any candidate order, give the
// same plan and PlanHash.
func (p *Planner) Plan(in PlanInput) *WavePlan {
	out := &WavePlan{}
	ev := &expressionEvaluator{}
	selected := p.selectTargets(in, ev, out)
	p.assignWaves(in.Seed, selected, ev, out)
	out.Hash = PlanHash(out)
	return out
}

// fieldPathOfWaveExpression is the path reported for wave expression errors.
func fieldPathOfWaveExpression(i int) string {
	return field.NewPath("spec", "waves").Index(i).Child("expression").String()
}
