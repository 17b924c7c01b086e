package plan

import (
	"maps"
	"path"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

// labelGlob requires label key to be present with a value matching glob.
type labelGlob struct {
	key  string
	glob string
}

// targetSelector is spec.targets.selector, compiled.
type targetSelector struct {
	// labelSelectors and globs are OR-ed; with neither, every target matches.
	labelSelectors []labels.Selector
	// globs holds one entry per labelGlobs item; all globs of an entry must match.
	globs [][]labelGlob
	// expression, when set, must also be true.
	expression *targetExpression
}

// matchLabels reports whether t matches the label part of the selector.
func (s *targetSelector) matchLabels(t *Target) bool {
	if len(s.labelSelectors) == 0 && len(s.globs) == 0 {
		return true
	}
	set := labels.Set(t.Labels)
	for _, sel := range s.labelSelectors {
		if sel.Matches(set) {
			return true
		}
	}
	for _, entry := range s.globs {
		if matchGlobs(entry, t.Labels) {
			return true
		}
	}
	return false
}

// matchGlobs reports whether every glob of entry matches its label. A missing
// label never matches, not even "*": a glob is about a value, and selecting
// targets that lack the label would be a surprise.
func matchGlobs(entry []labelGlob, targetLabels map[string]string) bool {
	for _, g := range entry {
		v, ok := targetLabels[g.key]
		if !ok {
			return false
		}
		// The pattern was checked at compile time, so an error cannot occur;
		// should it, the target does not match.
		if m, err := path.Match(g.glob, v); err != nil || !m {
			return false
		}
	}
	return true
}

// compileLabelSelector validates and converts a label selector. A nil
// selector compiles to nil (no restriction); an empty one matches everything,
// as everywhere in Kubernetes.
func compileLabelSelector(sel *metav1.LabelSelector, fldPath *field.Path) (labels.Selector, field.ErrorList) {
	if sel == nil {
		return nil, nil
	}
	errs := metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, fldPath)
	if len(errs) > 0 {
		return nil, errs
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return nil, field.ErrorList{field.Invalid(fldPath, sel, err.Error())}
	}
	return s, nil
}

// compileGlobs validates and compiles one labelGlobs entry.
func compileGlobs(entry fleetv1alpha1.LabelGlobSelector, fldPath *field.Path) ([]labelGlob, field.ErrorList) {
	var errs field.ErrorList
	if len(entry.MatchGlobs) == 0 {
		return nil, field.ErrorList{field.Required(fldPath, "at least one label glob is required")}
	}
	globs := make([]labelGlob, 0, len(entry.MatchGlobs))
	// Sorted keys make the error list, and evaluation order, deterministic.
	for _, key := range slices.Sorted(maps.Keys(entry.MatchGlobs)) {
		glob := entry.MatchGlobs[key]
		keyPath := fldPath.Key(key)
		errs = append(errs, metav1validation.ValidateLabelName(key, keyPath)...)
		if glob == "" {
			errs = append(errs, field.Invalid(keyPath, glob, "glob must not be empty"))
			continue
		}
		// path.Match checks the whole pattern for syntax errors even when the
		// name does not match, so matching against "" validates it.
		if _, err := path.Match(glob, ""); err != nil {
			errs = append(errs, field.Invalid(keyPath, glob, "invalid glob: "+err.Error()))
			continue
		}
		globs = append(globs, labelGlob{key: key, glob: glob})
	}
	return globs, errs
}

// compileTargetSelector compiles spec.targets.selector.
func compileTargetSelector(sel *fleetv1alpha1.TargetSelector, fldPath *field.Path) (targetSelector, field.ErrorList) {
	var (
		out  targetSelector
		errs field.ErrorList
	)
	for i := range sel.LabelSelectors {
		s, e := compileLabelSelector(&sel.LabelSelectors[i], fldPath.Child("labelSelectors").Index(i))
		errs = append(errs, e...)
		if s != nil {
			out.labelSelectors = append(out.labelSelectors, s)
		}
	}
	for i, entry := range sel.LabelGlobs {
		g, e := compileGlobs(entry, fldPath.Child("labelGlobs").Index(i).Child("matchGlobs"))
		errs = append(errs, e...)
		if len(e) == 0 {
			out.globs = append(out.globs, g)
		}
	}
	if sel.Expression != "" {
		expression, err := compileExpression(sel.Expression)
		if err != nil {
			errs = append(errs, field.Invalid(fldPath.Child("expression"), sel.Expression, firstLine(err)))
		}
		out.expression = expression
	}
	return out, errs
}
