package plan

import (
	"errors"
	"fmt"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/conf"
	"github.com/expr-lang/expr/parser"
	"github.com/expr-lang/expr/vm"
)

// expressionEnv is the typed environment every selection and wave expression
// is compiled against. Being typed is what turns `labels.tier == 3` or a
// misspelt variable into a compile error at admission instead of a silent
// mismatch at rollout time. Params are strings, as Stage variables are; a
// numeric comparison converts explicitly: `int(params.cells) > 2`.
type expressionEnv struct {
	Name   string            `expr:"name"`
	Source string            `expr:"source"`
	Labels map[string]string `expr:"labels"`
	Params map[string]string `expr:"params"`
}

// maxExpressionNodes bounds the size of a compiled expression; the API already
// caps its length at 2048 characters.
const maxExpressionNodes = 2000

// targetExpression is a compiled expr-lang boolean over a target.
type targetExpression struct {
	source  string
	program *vm.Program
	// native, when set, evaluates the expression without the VM.
	native nativePredicate
}

// compileExpression compiles source against the typed target environment,
// with fast map lookups when possible. It never panics: a panic inside the
// compiler is reported as an error.
func compileExpression(source string) (*targetExpression, error) {
	return compileExpressionWith(source, true)
}

// compileExpressionWith compiles source, with or without the lookup patcher
// (tests compare both).
func compileExpressionWith(source string, fastLookups bool) (*targetExpression, error) {
	tree, program, err := compileProgram(source, fastLookups, expr.AsBool())
	if err != nil {
		return nil, err
	}
	e := &targetExpression{source: source, program: program}
	if fastLookups {
		e.native = nativeFrom(tree.Node)
	}
	return e, nil
}

// compileProgram parses source within the limits and compiles it against
// the typed target environment with the given result type. It never panics:
// a panic inside the compiler is reported as an error.
func compileProgram(source string, fastLookups bool, result expr.Option) (_ *parser.Tree, _ *vm.Program, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("error compiling expression: %v", r)
		}
	}()
	// Parse once on our own to check the limits before expr-lang compiles
	// (its optimizer would already materialise a constant range).
	cfg := conf.CreateNew()
	cfg.MaxNodes = maxExpressionNodes
	tree, err := parser.ParseWithConfig(source, cfg)
	if err != nil {
		return nil, nil, err
	}
	if err := checkExpressionLimits(tree.Node); err != nil {
		return nil, nil, err
	}
	options := []expr.Option{
		expr.Env(&expressionEnv{}),
		result,
		expr.MaxNodes(maxExpressionNodes),
	}
	if fastLookups {
		options = append(options, lookupFunctions...)
		options = append(options, convertFunctions...)
		options = append(options, expr.Patch(mapLookupPatcher{}), expr.Patch(conversionPatcher{}))
	}
	program, err := expr.Compile(source, options...)
	if err != nil {
		return nil, nil, err
	}
	return tree, program, nil
}

// expressionEvaluator runs compiled expressions, reusing one VM so that
// evaluating an expression over 10,000 targets does not allocate a VM each.
// It is not safe for concurrent use: each planning run makes its own.
type expressionEvaluator struct {
	machine vm.VM
	// env is reused for every evaluation: passing a pointer to it keeps the
	// VM from boxing a fresh copy of the environment each time.
	env expressionEnv
}

// errNotBool should not happen (AsBool is checked at compile time) but is
// reported rather than trusted.
var errNotBool = errors.New("expression did not return a boolean")

// eval evaluates e over t.
func (ev *expressionEvaluator) eval(e *targetExpression, t *Target) (bool, error) {
	if e.native != nil {
		return e.native(t), nil
	}
	out, err := ev.run(e.program, t)
	if err != nil {
		return false, err
	}
	b, ok := out.(bool)
	if !ok {
		return false, errNotBool
	}
	return b, nil
}

// run runs program over t.
func (ev *expressionEvaluator) run(program *vm.Program, t *Target) (any, error) {
	ev.env = expressionEnv{Name: t.Name, Source: t.Source, Labels: t.Labels, Params: t.Params}
	return ev.machine.Run(program, &ev.env)
}

// firstLine is the first line of an expr-lang error: the message and its
// position. The following lines repeat the source with a caret, which the
// field path and value of a validation error already show.
func firstLine(err error) string {
	msg, _, _ := strings.Cut(err.Error(), "\n")
	return strings.TrimSpace(msg)
}
