package plan

import (
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

// This file is the one place in the planner that knows the settings of a
// wave (its knobs: maxConcurrent, soak, ...). Each knob is a field of
// PlannedWave, a field of WavePreview when previews show it, and one entry
// of waveKnobs saying how it is validated beyond CEL, resolved, hashed and
// shown. Compile, PlanHash, Diff, NewPlanPreview and RenderPlanTable iterate
// waveKnobs and name no knob. CONTRIBUTING.md ("Adding a wave knob") walks
// through adding one.

// PlannedWave is one wave of a plan, with its members and resolved settings.
type PlannedWave struct {
	// Name is the wave's name.
	Name string `json:"name"`
	// Members are the wave's targets in promotion order (the stable hash order).
	Members []Target `json:"members"`
	// Cap is the resolved count: the most targets the wave takes. Nil when the
	// wave has no count.
	Cap *int `json:"cap,omitempty"`
	// MaxConcurrent is how many members may be in flight at once, at least 1.
	MaxConcurrent int `json:"maxConcurrent"`
	// MaxFailures is how many members may fail without halting the wave.
	MaxFailures int `json:"maxFailures"`
	// ProgressDeadline is how long one member may take to succeed.
	ProgressDeadline time.Duration `json:"progressDeadline"`
	// UnhealthyGrace is how long a member's Stage may stay unhealthy after
	// its Promotion succeeded before the member fails. Zero (a plan snapshot
	// taken before the setting existed) leaves it to ProgressDeadline.
	UnhealthyGrace time.Duration `json:"unhealthyGrace,omitempty"`
	// Soak is how long Freight must stay verified in the wave before the next.
	Soak time.Duration `json:"soak"`
	// Approval says whether the wave waits for `kargo approve`.
	Approval fleetv1alpha1.ApprovalPolicy `json:"approval"`
	// ManualPromotion says the wave waits for its wave Stage to be promoted
	// from outside (spec.waves[].promotion: Manual); otherwise kargo-fleet
	// promotes it once the previous wave passed and soaked.
	ManualPromotion bool `json:"manualPromotion,omitempty"`
}

// WavePreview is one wave of a PlanPreview.
type WavePreview struct {
	// Name is the wave's name.
	Name string `json:"name"`
	// Members is the number of targets in the wave.
	Members int `json:"members"`
	// Cap is the resolved count, when the wave has one.
	Cap *int `json:"cap,omitempty"`
	// MaxConcurrent, MaxFailures, ProgressDeadline, UnhealthyGrace, Soak and
	// Approval are the resolved settings.
	MaxConcurrent    int    `json:"maxConcurrent"`
	MaxFailures      int    `json:"maxFailures"`
	ProgressDeadline string `json:"progressDeadline"`
	UnhealthyGrace   string `json:"unhealthyGrace"`
	Soak             string `json:"soak"`
	Approval         string `json:"approval"`
	// Targets are the member IDs in promotion order.
	Targets []string `json:"targets"`
}

// waveKnob says how one setting of spec.waves[] reaches a plan.
type waveKnob struct {
	// name is the setting's JSON name in spec.waves[]: validation errors
	// carry it in their path and plan diffs name the setting by it.
	name string
	// compile validates the setting of w beyond the API's CEL rules (the
	// webhook, the CLI and the controller all call it), applies its default
	// and returns how it sets a PlannedWave whose members are chosen.
	// fldPath is the setting's path, spec.waves[i].<name>.
	compile func(w *fleetv1alpha1.Wave, fldPath *field.Path) (resolveKnob, field.ErrorList)
	// hash writes the resolved setting into PlanHash. A knob added after
	// the "kargo-fleet/plan/v1" encoding writes nothing at its zero value
	// (planHasher.laterNum), so that the plans of existing FleetStages keep
	// their hash and open rollouts keep their plan.
	hash func(pw *PlannedWave, h *planHasher)
	// show is the resolved setting as the plan table and plan diffs show
	// it; nil keeps the setting out of previews and diffs.
	show func(pw *PlannedWave) string
	// preview copies the resolved setting into its WavePreview field; set
	// exactly when show is.
	preview func(pw *PlannedWave, wp *WavePreview)
	// column heads the setting's column in the wide plan table; narrow heads
	// it in the default one, "" when only the wide table shows it.
	column, narrow string
}

// resolveKnob sets one resolved setting of pw, whose members are chosen.
type resolveKnob func(pw *PlannedWave)

// waveKnobs are the settings of a wave, in the order PlanHash writes them
// (the "kargo-fleet/plan/v1" order: append new knobs at the end), the plan
// table shows them and diffs list them.
var waveKnobs = []waveKnob{
	{
		name: "maxConcurrent", column: "MAX CONCURRENT", narrow: "CONCURRENT",
		compile: func(w *fleetv1alpha1.Wave, fldPath *field.Path) (resolveKnob, field.ErrorList) {
			a, errs := compileAmount(w.MaxConcurrent, amount{value: fleetv1alpha1.DefaultMaxConcurrent},
				parsePositiveAmount, fldPath)
			// A percentage rounds up and a wave promotes at least one target at once.
			return func(pw *PlannedWave) { pw.MaxConcurrent = max(1, a.roundUp(len(pw.Members))) }, errs
		},
		hash:    func(pw *PlannedWave, h *planHasher) { h.num(int64(pw.MaxConcurrent)) },
		show:    func(pw *PlannedWave) string { return strconv.Itoa(pw.MaxConcurrent) },
		preview: func(pw *PlannedWave, wp *WavePreview) { wp.MaxConcurrent = pw.MaxConcurrent },
	},
	{
		name: "maxFailures", column: "MAX FAILURES", narrow: "MAX FAILURES",
		compile: func(w *fleetv1alpha1.Wave, fldPath *field.Path) (resolveKnob, field.ErrorList) {
			a, errs := compileAmount(w.MaxFailures, amount{}, parseAmount, fldPath)
			// A percentage rounds down: 50% of 3 members allows 1 failure.
			return func(pw *PlannedWave) { pw.MaxFailures = a.roundDown(len(pw.Members)) }, errs
		},
		hash:    func(pw *PlannedWave, h *planHasher) { h.num(int64(pw.MaxFailures)) },
		show:    func(pw *PlannedWave) string { return strconv.Itoa(pw.MaxFailures) },
		preview: func(pw *PlannedWave, wp *WavePreview) { wp.MaxFailures = pw.MaxFailures },
	},
	{
		name: "progressDeadline", column: "DEADLINE",
		compile: func(w *fleetv1alpha1.Wave, fldPath *field.Path) (resolveKnob, field.ErrorList) {
			d, errs := positiveDuration(fldPath, "progressDeadline", w.ProgressDeadline,
				fleetv1alpha1.DefaultProgressDeadline)
			if w.ProgressDeadline != nil && d > 0 && d < minProgressDeadline {
				errs = append(errs, field.Invalid(fldPath, w.ProgressDeadline.String(),
					"progressDeadline must be at least "+fleetv1alpha1.MinProgressDeadline))
			}
			return func(pw *PlannedWave) { pw.ProgressDeadline = d }, errs
		},
		hash:    func(pw *PlannedWave, h *planHasher) { h.num(int64(pw.ProgressDeadline)) },
		show:    func(pw *PlannedWave) string { return formatDuration(pw.ProgressDeadline) },
		preview: func(pw *PlannedWave, wp *WavePreview) { wp.ProgressDeadline = formatDuration(pw.ProgressDeadline) },
	},
	{
		name: "unhealthyGrace", column: "UNHEALTHY GRACE",
		compile: func(w *fleetv1alpha1.Wave, fldPath *field.Path) (resolveKnob, field.ErrorList) {
			d, errs := positiveDuration(fldPath, "unhealthyGrace", w.UnhealthyGrace, fleetv1alpha1.DefaultUnhealthyGrace)
			return func(pw *PlannedWave) { pw.UnhealthyGrace = d }, errs
		},
		hash:    func(pw *PlannedWave, h *planHasher) { h.num(int64(pw.UnhealthyGrace)) },
		show:    func(pw *PlannedWave) string { return formatDuration(pw.UnhealthyGrace) },
		preview: func(pw *PlannedWave, wp *WavePreview) { wp.UnhealthyGrace = formatDuration(pw.UnhealthyGrace) },
	},
	{
		name: "soak", column: "SOAK",
		compile: func(w *fleetv1alpha1.Wave, fldPath *field.Path) (resolveKnob, field.ErrorList) {
			var soak time.Duration
			if w.Soak != nil {
				soak = w.Soak.Duration
			}
			return func(pw *PlannedWave) { pw.Soak = soak }, validateSoak(soak, fldPath)
		},
		hash:    func(pw *PlannedWave, h *planHasher) { h.num(int64(pw.Soak)) },
		show:    func(pw *PlannedWave) string { return formatDuration(pw.Soak) },
		preview: func(pw *PlannedWave, wp *WavePreview) { wp.Soak = formatDuration(pw.Soak) },
	},
	{
		name: "approval", column: "APPROVAL", narrow: "APPROVAL",
		compile: func(w *fleetv1alpha1.Wave, fldPath *field.Path) (resolveKnob, field.ErrorList) {
			approval, errs := compileEnum(w.Approval, fleetv1alpha1.ApprovalNone, fldPath,
				fleetv1alpha1.ApprovalNone, fleetv1alpha1.ApprovalRequired)
			return func(pw *PlannedWave) { pw.Approval = approval }, errs
		},
		hash:    func(pw *PlannedWave, h *planHasher) { h.str(string(pw.Approval)) },
		show:    func(pw *PlannedWave) string { return string(pw.Approval) },
		preview: func(pw *PlannedWave, wp *WavePreview) { wp.Approval = string(pw.Approval) },
	},
	{
		// promotion came after plan/v1: Auto (the zero value) hashes nothing.
		// Previews and diffs do not show it.
		name: "promotion",
		compile: func(w *fleetv1alpha1.Wave, fldPath *field.Path) (resolveKnob, field.ErrorList) {
			promotion, errs := compileEnum(w.Promotion, fleetv1alpha1.WavePromotionAuto, fldPath,
				fleetv1alpha1.WavePromotionAuto, fleetv1alpha1.WavePromotionManual)
			manual := promotion == fleetv1alpha1.WavePromotionManual
			return func(pw *PlannedWave) { pw.ManualPromotion = manual }, errs
		},
		hash: func(pw *PlannedWave, h *planHasher) {
			if pw.ManualPromotion {
				h.str("manual-promotion")
			}
		},
	},
}

// heading is the knob's column heading in the wide or the default plan
// table; "" leaves the knob out of that table.
func (k *waveKnob) heading(wide bool) string {
	switch {
	case k.show == nil:
		return ""
	case wide:
		return k.column
	}
	return k.narrow
}

// compileAmount parses an optional count-or-percent setting with parse,
// or returns def when it is unset.
func compileAmount(v *intstr.IntOrString, def amount, parse func(intstr.IntOrString) (amount, error),
	fldPath *field.Path) (amount, field.ErrorList) {
	if v == nil {
		return def, nil
	}
	a, err := parse(*v)
	if err != nil {
		return a, field.ErrorList{field.Invalid(fldPath, v.String(), err.Error())}
	}
	return a, nil
}

// compileEnum resolves an optional enum setting: def when it is unset, else
// its value, which must be one of supported.
func compileEnum[E ~string](v, def E, fldPath *field.Path, supported ...E) (E, field.ErrorList) {
	if v == "" {
		return def, nil
	}
	for _, s := range supported {
		if v == s {
			return v, nil
		}
	}
	return def, field.ErrorList{field.NotSupported(fldPath, v, supported)}
}
