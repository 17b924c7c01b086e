package analysis

import (
	"errors"
	"fmt"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/conf"
	"github.com/expr-lang/expr/parser"
	"github.com/expr-lang/expr/vm"
)

// singleEnv is what a success condition sees for a plain or per-target
// metric. Typed, so `result > "x"` or a misspelt name fails at admission.
type singleEnv struct {
	// Result is the measured value (the latest sample of a range).
	Result float64 `expr:"result"`
	// Values are all samples of the measurement.
	Values []float64 `expr:"values"`
}

// baselineEnv is what a success condition sees for a baseline metric.
type baselineEnv struct {
	// Result is the mean of the wave's samples.
	Result float64 `expr:"result"`
	// Baseline is the mean of the baseline's samples.
	Baseline float64 `expr:"baseline"`
	// Values are the wave's samples.
	Values []float64 `expr:"values"`
	// BaselineValues are the baseline's samples.
	BaselineValues []float64 `expr:"baselineValues"`
}

// maxConditionNodes bounds the size of a compiled condition.
const maxConditionNodes = 500

// allowedConditionBuiltins are the builtins a condition may call: numbers
// and aggregates, each linear in its input.
var allowedConditionBuiltins = []string{
	"abs", "ceil", "floor", "round", "int", "float", "len",
	"min", "max", "mean", "median", "sum", "count", "first", "last",
}

// condition is a compiled success condition. It is immutable and safe for
// concurrent use.
type condition struct {
	source   string
	program  *vm.Program
	baseline bool
}

// compileCondition compiles source against the environment of a baseline
// metric or of any other. It never panics.
func compileCondition(source string, baseline bool) (_ *condition, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("error compiling condition: %v", r)
		}
	}()
	if source == "" {
		return nil, errors.New("a success condition is required")
	}
	var env any = &singleEnv{}
	if baseline {
		env = &baselineEnv{}
	}
	options := []expr.Option{expr.Env(env), expr.AsBool(), expr.MaxNodes(maxConditionNodes), expr.DisableAllBuiltins()}
	for _, name := range allowedConditionBuiltins {
		options = append(options, expr.EnableBuiltin(name))
	}
	cfg := conf.CreateNew()
	cfg.MaxNodes = maxConditionNodes
	for _, opt := range options {
		opt(cfg)
	}
	tree, err := parser.ParseWithConfig(source, cfg)
	if err != nil {
		return nil, err
	}
	if err := checkConditionCost(tree.Node); err != nil {
		return nil, err
	}
	program, err := expr.Compile(source, options...)
	if err != nil {
		return nil, err
	}
	return &condition{source: source, program: program, baseline: baseline}, nil
}

// eval runs the condition; env must be the environment it was compiled for.
func (c *condition) eval(env any) (ok bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			ok, err = false, fmt.Errorf("error evaluating condition: %v", r)
		}
	}()
	out, err := expr.Run(c.program, env)
	if err != nil {
		return false, err
	}
	b, isBool := out.(bool)
	if !isBool {
		return false, fmt.Errorf("condition returned %T, not a boolean", out)
	}
	return b, nil
}
