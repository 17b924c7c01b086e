package plan

import (
	"errors"
	"reflect"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
)

// Expressions are evaluated once per target and wave: up to a few hundred
// thousand times per plan of 10,000 targets. expr-lang reads map entries
// through reflection, which made `labels.x` the most expensive part of
// planning. The patcher below rewrites `labels.<key>`, `labels[<key>]` and
// the same on params into calls of two typed functions that index the
// target's maps directly. Semantics are unchanged: a missing key reads as "".
// Target expressions cannot declare variables (no `let`, see
// expression_limits.go), so `labels` and `params` always mean the target's.

const (
	labelLookupFunc = "__fleetLabel"
	paramLookupFunc = "__fleetParam"
)

var errLookupArguments = errors.New("internal lookup called with unexpected arguments")

// lookupFunctions declares the two lookups with their types, so the checker
// keeps rejecting `labels.tier == 3`.
var lookupFunctions = []expr.Option{
	expr.Function(labelLookupFunc, func(args ...any) (any, error) {
		env, ok1 := args[0].(*expressionEnv)
		key, ok2 := args[1].(string)
		if !ok1 || !ok2 {
			return nil, errLookupArguments
		}
		return env.Labels[key], nil
	}, new(func(*expressionEnv, string) string)),
	expr.Function(paramLookupFunc, func(args ...any) (any, error) {
		env, ok1 := args[0].(*expressionEnv)
		key, ok2 := args[1].(string)
		if !ok1 || !ok2 {
			return nil, errLookupArguments
		}
		return env.Params[key], nil
	}, new(func(*expressionEnv, string) string)),
}

// mapLookupPatcher rewrites member access on the labels and params
// variables into the typed lookups.
type mapLookupPatcher struct{}

var stringType = reflect.TypeOf("")

// Visit implements ast.Visitor.
func (mapLookupPatcher) Visit(node *ast.Node) {
	m, ok := (*node).(*ast.MemberNode)
	if !ok || m.Optional || m.Method {
		return
	}
	id, ok := m.Node.(*ast.IdentifierNode)
	if !ok {
		return
	}
	var fn string
	switch id.Value {
	case "labels":
		fn = labelLookupFunc
	case "params":
		fn = paramLookupFunc
	default:
		return
	}
	// Only string keys: anything else keeps the generic path and its error.
	if t := m.Property.Type(); t == nil || t != stringType {
		return
	}
	ast.Patch(node, &ast.CallNode{
		Callee:    &ast.IdentifierNode{Value: fn},
		Arguments: []ast.Node{&ast.IdentifierNode{Value: "$env"}, m.Property},
	})
}
