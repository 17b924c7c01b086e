package plan

import (
	"fmt"
	"reflect"
	"regexp"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// shardNameRE is fleetv1alpha1.ShardNamePattern compiled.
var shardNameRE = regexp.MustCompile(fleetv1alpha1.ShardNamePattern)

// ExclusionInvalidShard excludes a target whose shard could not be resolved (the
// shard expression failed) or is not a valid shard name. The target gets no
// Stage: a Stage on a guessed shard would be promoted by a Kargo controller
// that may not reach its cluster.
const ExclusionInvalidShard ExclusionReason = "InvalidShard"

// shardResolver is spec.shards compiled: how a target's shard is found.
type shardResolver struct {
	label, param string
	expression   *vm.Program
	def          string
}

// Why a name cannot be a shard: the same text for every target, so it is
// built once.
var (
	shardNameTooLong = fmt.Sprintf("must be at most %d characters (it becomes the value of label %s)",
		fleetv1alpha1.MaxShardNameLength, kargo.ShardLabel)
	shardNameNotLabel = fmt.Sprintf("must be a label value (%s): Kargo copies it into label %s",
		fleetv1alpha1.ShardNamePattern, kargo.ShardLabel)
)

// ValidShardName reports why name cannot be a Kargo shard, or "" when it
// can. The empty name (Kargo's default controller) is valid.
func ValidShardName(name string) string {
	switch {
	case name == "":
		return ""
	case len(name) > fleetv1alpha1.MaxShardNameLength:
		return shardNameTooLong
	case !shardNameRE.MatchString(name):
		return shardNameNotLabel
	}
	return ""
}

// compileShards validates spec.shards and compiles how target shards are
// resolved; nil spec gives a nil resolver (shards are not managed). The
// per-shard limits are compiled by CompileShardLimits.
func compileShards(spec *fleetv1alpha1.ShardsSpec, fldPath *field.Path) (*shardResolver, field.ErrorList) {
	if spec == nil {
		return nil, nil
	}
	var errs field.ErrorList
	set := 0
	for _, v := range []string{spec.TargetLabel, spec.TargetParam, spec.Expression} {
		if v != "" {
			set++
		}
	}
	if set > 1 {
		errs = append(errs, field.Invalid(fldPath, "", "set at most one of targetLabel, targetParam or expression"))
	}
	r := &shardResolver{label: spec.TargetLabel, param: spec.TargetParam, def: spec.Default}
	if spec.TargetLabel != "" {
		errs = append(errs, metav1validation.ValidateLabelName(spec.TargetLabel, fldPath.Child("targetLabel"))...)
	}
	if spec.Expression != "" {
		_, program, err := compileProgram(spec.Expression, true, expr.AsKind(reflect.String))
		if err != nil {
			errs = append(errs, field.Invalid(fldPath.Child("expression"), spec.Expression, firstLine(err)))
		}
		r.expression = program
	}
	for _, f := range []struct {
		name, value string
	}{{"default", spec.Default}, {"waveShard", spec.WaveShard}} {
		if msg := ValidShardName(f.value); msg != "" {
			errs = append(errs, field.Invalid(fldPath.Child(f.name), f.value, msg))
		}
	}
	_, limitErrs := CompileShardLimits(spec, fldPath)
	errs = append(errs, limitErrs...)
	return r, errs
}

// resolve returns t's shard: from its label, its param or the expression,
// else the default. When the expression fails or the result is not a valid
// shard name it returns why instead, as an exclusion message: a string, not
// an error, since every target of a fleet may fail alike and a message is
// all that is kept.
func (r *shardResolver) resolve(t *Target, ev *expressionEvaluator) (shard, problem string) {
	switch {
	case r.label != "":
		shard = t.Labels[r.label]
	case r.param != "":
		shard = t.Params[r.param]
	case r.expression != nil:
		out, err := ev.run(r.expression, t)
		if err != nil {
			return "", evaluationError("spec.shards.expression: ", err)
		}
		s, ok := out.(string)
		if !ok {
			return "", fmt.Sprintf("spec.shards.expression: returned %T, not a string", out)
		}
		shard = s
	}
	shard = strings.TrimSpace(shard)
	if shard == "" {
		return r.def, ""
	}
	if msg := ValidShardName(shard); msg != "" {
		return "", valueMessage("shard ", shard, " ", msg)
	}
	return shard, ""
}

// ShardLimits is the per-shard bound on target Promotions in flight
// (spec.shards.maxConcurrent and limits). The zero value limits nothing.
type ShardLimits struct {
	// def applies to shards without their own limit; 0 means none.
	def int
	// perShard holds spec.shards.limits.
	perShard map[string]int
}

// CompileShardLimits validates and compiles the per-shard limits of spec
// (nil: none). fldPath is the path of spec.shards.
func CompileShardLimits(spec *fleetv1alpha1.ShardsSpec, fldPath *field.Path) (ShardLimits, field.ErrorList) {
	var out ShardLimits
	if spec == nil {
		return out, nil
	}
	var errs field.ErrorList
	if spec.MaxConcurrent != nil {
		if *spec.MaxConcurrent < 1 {
			errs = append(errs, field.Invalid(fldPath.Child("maxConcurrent"), *spec.MaxConcurrent, "must be at least 1"))
		} else {
			out.def = int(*spec.MaxConcurrent)
		}
	}
	for i, l := range spec.Limits {
		p := fldPath.Child("limits").Index(i)
		if msg := ValidShardName(l.Shard); msg != "" {
			errs = append(errs, field.Invalid(p.Child("shard"), l.Shard, msg))
		}
		if _, dup := out.perShard[l.Shard]; dup {
			errs = append(errs, field.Duplicate(p.Child("shard"), l.Shard))
		}
		if l.MaxConcurrent < 1 {
			errs = append(errs, field.Invalid(p.Child("maxConcurrent"), l.MaxConcurrent, "must be at least 1"))
		}
		if out.perShard == nil {
			out.perShard = map[string]int{}
		}
		out.perShard[l.Shard] = int(l.MaxConcurrent)
	}
	return out, errs
}

// Limit returns the most target Promotions in flight on shard, and false
// when the shard is not limited.
func (l ShardLimits) Limit(shard string) (int, bool) {
	if n, ok := l.perShard[shard]; ok {
		return n, true
	}
	return l.def, l.def > 0
}

// any reports whether some shard is limited.
func (l ShardLimits) any() bool {
	return l.def > 0 || len(l.perShard) > 0
}

// DisplayShard names a shard for people: the empty shard is Kargo's default
// controller.
func DisplayShard(shard string) string {
	if shard == "" {
		return "(default)"
	}
	return shard
}
