package plan

import (
	"time"

	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

// compiledConstraint is one spec.policy.constraints entry, compiled.
type compiledConstraint struct {
	name        string
	labelKey    string
	maxInFlight int
	// selector restricts the constraint to matching targets; nil means all.
	selector labels.Selector
}

// group returns the label value t is counted under, and false when the
// constraint does not apply to t: the selector does not match, or t lacks the
// label. A target without the label is not limited by the constraint, just
// as it would not be grouped with any other target.
func (c *compiledConstraint) group(t *Target) (string, bool) {
	v, ok := t.Labels[c.labelKey]
	if !ok {
		return "", false
	}
	if c.selector != nil && !c.selector.Matches(labels.Set(t.Labels)) {
		return "", false
	}
	return v, true
}

// CompiledPolicy is spec.policy compiled for scheduling: windows parsed with
// their time zones and constraints with their selectors. It is immutable and
// safe for concurrent use.
type CompiledPolicy struct {
	windows     windowSet
	constraints []compiledConstraint
	// fleetMaxFailures is spec.policy.maxFailures; nil when unset.
	fleetMaxFailures *amount
	// shardLimits bound target Promotions in flight per shard
	// (spec.shards.maxConcurrent and limits).
	shardLimits ShardLimits
}

// WithShardLimits returns a copy of p that also bounds target Promotions in
// flight per shard.
func (p *CompiledPolicy) WithShardLimits(l ShardLimits) *CompiledPolicy {
	out := &CompiledPolicy{}
	if p != nil {
		*out = *p
	}
	out.shardLimits = l
	return out
}

// CompilePolicy validates and compiles spec.policy. fldPath is the path of
// the policy field, e.g. field.NewPath("spec", "policy").
func CompilePolicy(policy *fleetv1alpha1.FleetPolicy, fldPath *field.Path) (*CompiledPolicy, field.ErrorList) {
	out := &CompiledPolicy{}
	if policy == nil {
		return out, nil
	}
	var errs field.ErrorList
	if policy.MaxFailures != nil {
		a, err := parseAmount(*policy.MaxFailures)
		if err != nil {
			errs = append(errs, field.Invalid(fldPath.Child("maxFailures"), policy.MaxFailures.String(), err.Error()))
		} else {
			out.fleetMaxFailures = &a
		}
	}
	switch policy.OnHalt {
	case "", fleetv1alpha1.InFlightFinish, fleetv1alpha1.InFlightAbort:
	default:
		errs = append(errs, field.NotSupported(fldPath.Child("onHalt"), policy.OnHalt,
			[]fleetv1alpha1.InFlightPolicy{fleetv1alpha1.InFlightFinish, fleetv1alpha1.InFlightAbort}))
	}
	switch policy.NewerFreight {
	case "", fleetv1alpha1.SupersedeQueue, fleetv1alpha1.SupersedeReplace:
	default:
		errs = append(errs, field.NotSupported(fldPath.Child("newerFreight"), policy.NewerFreight,
			[]fleetv1alpha1.SupersedePolicy{fleetv1alpha1.SupersedeQueue, fleetv1alpha1.SupersedeReplace}))
	}
	errs = append(errs, validateRollback(&policy.Rollback, fldPath.Child("rollback"))...)

	constraintsPath := fldPath.Child("constraints")
	names := map[string]bool{}
	for i := range policy.Constraints {
		c := &policy.Constraints[i]
		p := constraintsPath.Index(i)
		errs = append(errs, uniqueName(names, c.Name, p.Child("name"))...)
		cc, e := compileConstraint(c, p)
		errs = append(errs, e...)
		if cc != nil {
			out.constraints = append(out.constraints, *cc)
		}
	}

	windowsPath := fldPath.Child("windows")
	if len(policy.Windows) > maxWindows {
		errs = append(errs, field.TooMany(windowsPath, len(policy.Windows), maxWindows))
	}
	names = map[string]bool{}
	for i := range policy.Windows {
		if i >= maxWindows {
			break
		}
		w := &policy.Windows[i]
		p := windowsPath.Index(i)
		errs = append(errs, uniqueName(names, w.Name, p.Child("name"))...)
		cw, e := compileWindow(w, p)
		errs = append(errs, e...)
		if cw != nil {
			bit := uint32(1) << len(out.windows.windows)
			if cw.deny {
				out.windows.denyBits |= bit
			} else {
				out.windows.allowBits |= bit
			}
			out.windows.windows = append(out.windows.windows, cw)
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return out, nil
}

// compileConstraint validates and compiles one constraint.
func compileConstraint(c *fleetv1alpha1.ConcurrencyConstraint, fldPath *field.Path) (*compiledConstraint, field.ErrorList) {
	var errs field.ErrorList
	if c.LabelKey == "" {
		errs = append(errs, field.Required(fldPath.Child("labelKey"), "label key is required"))
	} else {
		errs = append(errs, metav1validation.ValidateLabelName(c.LabelKey, fldPath.Child("labelKey"))...)
	}
	if c.MaxInFlight < 1 {
		errs = append(errs, field.Invalid(fldPath.Child("maxInFlight"), c.MaxInFlight, "must be at least 1"))
	}
	selector, selErrs := compileLabelSelector(c.Selector, fldPath.Child("selector"))
	errs = append(errs, selErrs...)
	if len(errs) > 0 {
		return nil, errs
	}
	return &compiledConstraint{
		name:        c.Name,
		labelKey:    c.LabelKey,
		maxInFlight: int(c.MaxInFlight),
		selector:    selector,
	}, nil
}

// validateRollback checks spec.policy.rollback.
func validateRollback(r *fleetv1alpha1.RollbackPolicy, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch r.Mode {
	case "", fleetv1alpha1.RollbackManual, fleetv1alpha1.RollbackAutomatic:
	default:
		errs = append(errs, field.NotSupported(fldPath.Child("mode"), r.Mode,
			[]fleetv1alpha1.RollbackMode{fleetv1alpha1.RollbackManual, fleetv1alpha1.RollbackAutomatic}))
	}
	if r.MaxConcurrent != nil {
		if _, err := parsePositiveAmount(*r.MaxConcurrent); err != nil {
			errs = append(errs, field.Invalid(fldPath.Child("maxConcurrent"), r.MaxConcurrent.String(), err.Error()))
		}
	}
	return errs
}

// uniqueName reports an empty or repeated name.
func uniqueName(seen map[string]bool, name string, fldPath *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(fldPath, "name is required")}
	}
	if seen[name] {
		return field.ErrorList{field.Duplicate(fldPath, name)}
	}
	seen[name] = true
	return nil
}

// NextAllowed returns the first instant at or after now when the change
// windows let t start, and false when none is found within the search budget
// (for instance a deny window that never closes). With no window applying to
// t it returns now.
func (p *CompiledPolicy) NextAllowed(t *Target, now time.Time) (time.Time, bool) {
	if p == nil || len(p.windows.windows) == 0 {
		return now, true
	}
	return p.windows.nextAllowed(p.windows.applicable(t), now)
}
