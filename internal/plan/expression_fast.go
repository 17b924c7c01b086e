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
	// labelEqualFunc and paramEqualFunc fuse the most common test,
	// `labels.tier == "gold"`, into one call that returns a bool: no string
	// is boxed, so the test allocates nothing.
	labelEqualFunc = "__fleetLabelEq"
	paramEqualFunc = "__fleetParamEq"
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
	expr.Function(labelEqualFunc, func(args ...any) (any, error) {
		env, ok1 := args[0].(*expressionEnv)
		key, ok2 := args[1].(string)
		value, ok3 := args[2].(string)
		if !ok1 || !ok2 || !ok3 {
			return nil, errLookupArguments
		}
		return env.Labels[key] == value, nil
	}, new(func(*expressionEnv, string, string) bool)),
	expr.Function(paramEqualFunc, func(args ...any) (any, error) {
		env, ok1 := args[0].(*expressionEnv)
		key, ok2 := args[1].(string)
		value, ok3 := args[2].(string)
		if !ok1 || !ok2 || !ok3 {
			return nil, errLookupArguments
		}
		return env.Params[key] == value, nil
	}, new(func(*expressionEnv, string, string) bool)),
}

// mapLookupPatcher rewrites member access on the labels and params
// variables into the typed lookups.
type mapLookupPatcher struct{}

var stringType = reflect.TypeOf("")

// Visit implements ast.Visitor. ast.Walk visits children before their
// parent, so a comparison sees its operands already rewritten.
func (mapLookupPatcher) Visit(node *ast.Node) {
	if b, ok := (*node).(*ast.BinaryNode); ok {
		patchEquality(node, b)
		return
	}
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

// patchEquality rewrites `<lookup> == "literal"` (either order) into the
// fused comparison; `!=` becomes its negation.
func patchEquality(node *ast.Node, b *ast.BinaryNode) {
	if b.Operator != "==" && b.Operator != "!=" {
		return
	}
	call, lit := lookupCall(b.Left), literal(b.Right)
	if call == nil || lit == nil {
		call, lit = lookupCall(b.Right), literal(b.Left)
	}
	if call == nil || lit == nil {
		return
	}
	fn := labelEqualFunc
	if call.Callee.(*ast.IdentifierNode).Value == paramLookupFunc {
		fn = paramEqualFunc
	}
	var fused ast.Node = &ast.CallNode{
		Callee:    &ast.IdentifierNode{Value: fn},
		Arguments: []ast.Node{call.Arguments[0], call.Arguments[1], lit},
	}
	if b.Operator == "!=" {
		fused = &ast.UnaryNode{Operator: "not", Node: fused}
	}
	ast.Patch(node, fused)
}

// lookupCall returns n when it is a rewritten labels/params lookup.
func lookupCall(n ast.Node) *ast.CallNode {
	c, ok := n.(*ast.CallNode)
	if !ok || len(c.Arguments) != 2 {
		return nil
	}
	id, ok := c.Callee.(*ast.IdentifierNode)
	if !ok || (id.Value != labelLookupFunc && id.Value != paramLookupFunc) {
		return nil
	}
	return c
}

// literal returns n when it is a string literal.
func literal(n ast.Node) *ast.StringNode {
	s, _ := n.(*ast.StringNode)
	return s
}
