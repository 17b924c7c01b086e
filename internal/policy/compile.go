package policy

import (
	"fmt"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/version"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
)

// env is the typed environment rules compile against: a misspelt field is
// a compile error at admission, not a rule that silently never matches.
type env struct {
	Target  Target  `expr:"target"`
	Freight Freight `expr:"freight"`
}

// Compiled is a FreightPolicy ready to check. It is immutable and safe for
// concurrent use.
type Compiled struct {
	// Name is the FreightPolicy's name.
	Name string
	// UID and Generation identify what was compiled, for caching.
	UID        types.UID
	Generation int64
	// Hold says a wave with a target this policy blocks never passes.
	Hold       bool
	namespaces labels.Selector
	rules      []rule
}

type rule struct {
	name, message, require string
	// check is nil when the rule sets no require expression.
	targets, check *vm.Program
	// signatures is nil when the rule requires no signatures.
	signatures      *Requirement
	allowBreakGlass bool
}

// semver compares two versions (a leading "v" is ignored; "2.0" is
// 2.0.0): -1, 0 or 1. Rules use it for chart and tag versions.
var semverFunction = expr.Function("semver", func(params ...any) (any, error) {
	a, err := parseVersion(params[0].(string))
	if err != nil {
		return nil, err
	}
	b, err := parseVersion(params[1].(string))
	if err != nil {
		return nil, err
	}
	return a.Compare(b.String())
}, new(func(string, string) int))

func parseVersion(s string) (*version.Version, error) {
	v, err := version.ParseGeneric(strings.TrimPrefix(s, "v"))
	if err != nil {
		return nil, fmt.Errorf("semver: %q is not a version", s)
	}
	return v, nil
}

// Compile checks and compiles a FreightPolicy. Every error names its field.
func Compile(p *fleetv1alpha1.FreightPolicy) (*Compiled, field.ErrorList) {
	var errs field.ErrorList
	specPath := field.NewPath("spec")
	c := &Compiled{Name: p.Name, UID: p.UID, Generation: p.Generation,
		Hold: p.Spec.BlockedTargets != fleetv1alpha1.BlockedTargetsSkip, namespaces: labels.Everything()}
	if p.Spec.NamespaceSelector != nil {
		sel, err := metav1.LabelSelectorAsSelector(p.Spec.NamespaceSelector)
		if err != nil {
			errs = append(errs, field.Invalid(specPath.Child("namespaceSelector"), p.Spec.NamespaceSelector, err.Error()))
		}
		c.namespaces = sel
	}
	for i, r := range p.Spec.Rules {
		path := specPath.Child("rules").Index(i)
		cr := rule{name: r.Name, message: r.Message, require: r.Require, allowBreakGlass: r.AllowBreakGlass}
		var err error
		if strings.TrimSpace(r.Targets) != "" {
			if cr.targets, err = compileRule(r.Targets); err != nil {
				errs = append(errs, field.Invalid(path.Child("targets"), r.Targets, plan.FirstLine(err)))
			}
		}
		if r.Require != "" {
			if cr.check, err = compileRule(r.Require); err != nil {
				errs = append(errs, field.Invalid(path.Child("require"), r.Require, plan.FirstLine(err)))
			}
		}
		if r.Signatures != nil {
			var ferr *field.Error
			if cr.signatures, ferr = compileRequirement(r.Signatures, path.Child("signatures")); ferr != nil {
				errs = append(errs, ferr)
			}
		}
		if r.Require == "" && r.Signatures == nil {
			errs = append(errs, field.Required(path.Child("require"), "a rule sets require, signatures or both"))
		}
		c.rules = append(c.rules, cr)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return c, nil
}

// compileRule compiles a boolean rule expression within the bounded
// subset target expressions use. It never panics.
func compileRule(source string) (_ *vm.Program, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("error compiling expression: %v", r)
		}
	}()
	if err := plan.CheckBounded(source); err != nil {
		return nil, err
	}
	return expr.Compile(source, expr.Env(&env{}), expr.AsBool(), semverFunction,
		expr.MaxNodes(plan.MaxExpressionNodes))
}

// Governs says the policy applies to fleets in a namespace with these
// labels.
func (c *Compiled) Governs(namespaceLabels map[string]string) bool {
	return c.namespaces.Matches(labels.Set(namespaceLabels))
}
