package plan

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

// maxWaveNameLength matches the API bound; wave Stage names append it to the
// FleetStage's name.
const maxWaveNameLength = 24

// defaultExcludeLabels apply when spec.targets.excludeLabels is empty.
var defaultExcludeLabels = []string{fleetv1alpha1.FrozenLabel, fleetv1alpha1.ComplianceHoldLabel}

// InvalidSpecError is returned when a FleetStage spec cannot be planned. It
// is terminal: retrying cannot help until the spec changes.
type InvalidSpecError struct {
	// Errors names every invalid field.
	Errors field.ErrorList
}

// Error implements error.
func (e *InvalidSpecError) Error() string {
	return fmt.Sprintf("invalid FleetStage spec: %v", e.Errors.ToAggregate())
}

// Validate checks everything the planner needs from a FleetStage spec and
// returns one error per invalid field, each with its full path (for example
// spec.waves[2].expression). It is what the validating webhook, the CLI and
// the controller call; it never panics.
func Validate(spec *fleetv1alpha1.FleetStageSpec) field.ErrorList {
	_, errs := Compile(spec)
	return errs
}

// Compile validates spec and compiles it for planning: label selectors are
// parsed and expressions compiled once, however many targets are planned.
// On any error it returns a nil Planner and the complete error list.
func Compile(spec *fleetv1alpha1.FleetStageSpec) (*Planner, field.ErrorList) {
	specPath := field.NewPath("spec")
	if spec == nil {
		return nil, field.ErrorList{field.Required(specPath, "spec is required")}
	}
	var errs field.ErrorList
	p := &Planner{}

	errs = append(errs, validateStage(&spec.Stage, specPath.Child("stage"))...)

	targetsPath := specPath.Child("targets")
	errs = append(errs, validateSources(spec.Targets.Sources, targetsPath.Child("sources"))...)
	selection, selErrs := compileTargetSelector(&spec.Targets.Selector, targetsPath.Child("selector"))
	errs = append(errs, selErrs...)
	p.selection = selection
	p.excludeLabels = defaultExcludeLabels
	if len(spec.Targets.ExcludeLabels) > 0 {
		p.excludeLabels = spec.Targets.ExcludeLabels
		seen := map[string]bool{}
		for i, key := range spec.Targets.ExcludeLabels {
			keyPath := targetsPath.Child("excludeLabels").Index(i)
			errs = append(errs, metav1validation.ValidateLabelName(key, keyPath)...)
			if seen[key] {
				errs = append(errs, field.Duplicate(keyPath, key))
			}
			seen[key] = true
		}
	}

	waves, waveErrs := compileWaves(spec.Waves, specPath.Child("waves"))
	errs = append(errs, waveErrs...)
	p.waves = waves

	policy, policyErrs := CompilePolicy(&spec.Policy, specPath.Child("policy"))
	errs = append(errs, policyErrs...)
	shards, shardErrs := compileShards(spec.Shards, specPath.Child("shards"))
	errs = append(errs, shardErrs...)
	p.shards = shards
	if policy != nil && len(shardErrs) == 0 {
		limits, _ := CompileShardLimits(spec.Shards, specPath.Child("shards"))
		policy = policy.WithShardLimits(limits)
	}
	p.policy = policy

	if len(errs) > 0 {
		return nil, errs
	}
	return p, nil
}

// validateStage checks that exactly one way of naming the Stage is used.
func validateStage(s *fleetv1alpha1.StageSource, fldPath *field.Path) field.ErrorList {
	switch {
	case s.FromStage == "" && s.Inline == nil:
		return field.ErrorList{field.Required(fldPath, "exactly one of fromStage or inline must be set")}
	case s.FromStage != "" && s.Inline != nil:
		return field.ErrorList{field.Forbidden(fldPath.Child("inline"), "exactly one of fromStage or inline must be set")}
	case s.FromStage != "":
		var errs field.ErrorList
		for _, msg := range validation.IsDNS1123Subdomain(s.FromStage) {
			errs = append(errs, field.Invalid(fldPath.Child("fromStage"), s.FromStage, msg))
		}
		return errs
	}
	return validateRequestedFreight(s.Inline.RequestedFreight, fldPath.Child("inline", "requestedFreight"))
}

// validateSources checks spec.targets.sources. Inline target names must be
// unique across every inline source, and so must the IDs derived from them.
// Which kinds exist is the inventory's table to say (inventory.Kinds), not
// the planner's: every kind but Inline reads objects, which the planner
// never sees.
func validateSources(sources []fleetv1alpha1.TargetSource, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(sources) == 0 {
		return field.ErrorList{field.Required(fldPath, "at least one target source is required")}
	}
	inlineIDs := map[string]string{}
	for i := range sources {
		src := &sources[i]
		p := fldPath.Index(i)
		switch src.Kind {
		case fleetv1alpha1.InlineSource:
			if src.Inline == nil {
				errs = append(errs, field.Required(p.Child("inline"), "inline is required for kind Inline"))
			}
			if src.Selector != nil {
				errs = append(errs, field.Forbidden(p.Child("selector"), "selector is not used by kind Inline"))
			}
		case "":
			errs = append(errs, field.Required(p.Child("kind"), "kind is required"))
		default:
			if src.Inline != nil {
				errs = append(errs, field.Forbidden(p.Child("inline"), "inline is only allowed for kind Inline"))
			}
		}
		if src.Namespace != "" {
			for _, msg := range validation.IsDNS1123Label(src.Namespace) {
				errs = append(errs, field.Invalid(p.Child("namespace"), src.Namespace, msg))
			}
		}
		_, selErrs := compileLabelSelector(src.Selector, p.Child("selector"))
		errs = append(errs, selErrs...)
		for j, key := range src.Annotations {
			errs = append(errs, metav1validation.ValidateLabelName(key, p.Child("annotations").Index(j))...)
		}
		for j := range src.Inline {
			errs = append(errs, validateInlineTarget(&src.Inline[j], p.Child("inline").Index(j), inlineIDs)...)
		}
	}
	return errs
}

// validateInlineTarget checks one inline target; ids maps the IDs seen so far
// to the name they came from.
func validateInlineTarget(t *fleetv1alpha1.InlineTarget, fldPath *field.Path, ids map[string]string) field.ErrorList {
	var errs field.ErrorList
	namePath := fldPath.Child("name")
	if t.Name == "" {
		errs = append(errs, field.Required(namePath, "target name is required"))
	} else {
		id := TargetID(t.Name)
		if other, dup := ids[id]; dup {
			if other == t.Name {
				errs = append(errs, field.Duplicate(namePath, t.Name))
			} else {
				errs = append(errs, field.Invalid(namePath, t.Name,
					fmt.Sprintf("names %q and %q both map to target ID %q", other, t.Name, id)))
			}
		} else {
			ids[id] = t.Name
		}
	}
	// One key at a time, in order, so the error list is deterministic.
	for _, key := range slices.Sorted(maps.Keys(t.Labels)) {
		errs = append(errs, metav1validation.ValidateLabels(map[string]string{key: t.Labels[key]},
			fldPath.Child("labels"))...)
	}
	if _, ok := t.Params[""]; ok {
		errs = append(errs, field.Invalid(fldPath.Child("params"), "", "parameter names must not be empty"))
	}
	return errs
}

// compileWaves validates and compiles spec.waves.
func compileWaves(waves []fleetv1alpha1.Wave, fldPath *field.Path) ([]compiledWave, field.ErrorList) {
	if len(waves) == 0 {
		return nil, field.ErrorList{field.Required(fldPath, "at least one wave is required")}
	}
	var errs field.ErrorList
	out := make([]compiledWave, 0, len(waves))
	names := map[string]bool{}
	for i := range waves {
		w := &waves[i]
		p := fldPath.Index(i)
		errs = append(errs, uniqueName(names, w.Name, p.Child("name"))...)
		cw, e := compileWave(w, p)
		errs = append(errs, e...)
		if w.Selector == nil && w.Expression == "" && w.Count == nil && i != len(waves)-1 {
			errs = append(errs, field.Invalid(p, w.Name,
				"only the last wave may be a catch-all (no selector, expression or count): later waves would stay empty"))
		}
		out = append(out, cw)
	}
	return out, errs
}

// compileWave validates one wave and resolves its defaults.
func compileWave(w *fleetv1alpha1.Wave, fldPath *field.Path) (compiledWave, field.ErrorList) {
	var errs field.ErrorList
	if w.Name != "" {
		for _, msg := range validation.IsDNS1123Label(w.Name) {
			errs = append(errs, field.Invalid(fldPath.Child("name"), w.Name, msg))
		}
		if len(w.Name) > maxWaveNameLength {
			errs = append(errs, field.TooLong(fldPath.Child("name"), w.Name, maxWaveNameLength))
		}
	}
	cw := compiledWave{name: w.Name, knobs: make([]resolveKnob, len(waveKnobs))}
	var selErrs field.ErrorList
	cw.selector, selErrs = compileLabelSelector(w.Selector, fldPath.Child("selector"))
	errs = append(errs, selErrs...)
	if w.Expression != "" {
		e, err := compileExpression(w.Expression)
		if err != nil {
			errs = append(errs, field.Invalid(fldPath.Child("expression"), w.Expression, firstLine(err)))
		}
		cw.expression = e
	}
	if w.Count != nil {
		a, err := parsePositiveAmount(*w.Count)
		if err != nil {
			errs = append(errs, field.Invalid(fldPath.Child("count"), w.Count.String(), err.Error()))
		}
		cw.count = &a
	}
	for i := range waveKnobs {
		k := &waveKnobs[i]
		var knobErrs field.ErrorList
		cw.knobs[i], knobErrs = k.compile(w, fldPath.Child(k.name))
		errs = append(errs, knobErrs...)
	}
	return cw, errs
}

// Bounds of durations, parsed from the API's constants.
var (
	minProgressDeadline = mustDuration(fleetv1alpha1.MinProgressDeadline)
	maxSoak             = mustDuration(fleetv1alpha1.MaxSoak)
)

func mustDuration(s string) time.Duration {
	d, err := time.ParseDuration(s)
	if err != nil {
		panic(err)
	}
	return d
}

// validateSoak checks a soak or a requiredSoakTime: between 0 and MaxSoak.
func validateSoak(d time.Duration, fldPath *field.Path) field.ErrorList {
	if d < 0 || d > maxSoak {
		return field.ErrorList{field.Invalid(fldPath, d.String(), "must be between 0s and "+fleetv1alpha1.MaxSoak+" (30 days)")}
	}
	return nil
}

// validateRequestedFreight checks an inline Stage's requested Freight: each
// entry must make Freight available somehow.
func validateRequestedFreight(rf []fleetv1alpha1.RequestedFreight, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i := range rf {
		src := &rf[i].Sources
		p := fldPath.Index(i).Child("sources")
		if !src.Direct && len(src.Stages) == 0 {
			errs = append(errs, field.Required(p,
				"set direct or name at least one upstream Stage in stages, else no Freight is ever available"))
		}
		if src.RequiredSoakTime != nil {
			errs = append(errs, validateSoak(src.RequiredSoakTime.Duration, p.Child("requiredSoakTime"))...)
		}
	}
	return errs
}

// positiveDuration resolves an optional duration setting that must be
// positive: its value when set, else the API's built-in default def.
// fldPath is the setting's path and name its JSON name.
func positiveDuration(fldPath *field.Path, name string, v *metav1.Duration, def string) (time.Duration, field.ErrorList) {
	if v != nil {
		if v.Duration <= 0 {
			return v.Duration, field.ErrorList{field.Invalid(fldPath, v.String(), name+" must be positive")}
		}
		return v.Duration, nil
	}
	d, err := time.ParseDuration(def)
	if err != nil || d <= 0 {
		return 0, field.ErrorList{field.InternalError(fldPath, errors.New("invalid built-in default duration "+def))}
	}
	return d, nil
}

// compiledWave is one wave, compiled, with its defaults resolved.
type compiledWave struct {
	name string
	// selector and expression are AND-ed; with neither the wave matches every
	// remaining target.
	selector   labels.Selector
	expression *targetExpression
	count      *amount
	// knobs resolve the wave's settings, one per entry of waveKnobs.
	knobs []resolveKnob
}
