package plan

import "github.com/expr-lang/expr/ast"

// Most target expressions are boolean combinations of label tests:
// `labels.tier == "gold" && !("frozen" in labels)`. Running those in the
// expr-lang VM costs a few hundred nanoseconds each, mostly VM setup; over
// 10,000 targets and several waves that was half of planning. nativePredicate
// evaluates exactly that subset directly in Go. Anything else runs in the VM.
// Both give the same result: the expression has already been type-checked by
// expr-lang, and none of these operations can fail at run time.

// nativePredicate is an expression compiled to a Go function.
type nativePredicate func(t *Target) bool

// nativeFrom compiles node when it is in the native subset:
//
//	true, false
//	a && b, a and b, a || b, a or b, !a, not a
//	<string> == <string>, <string> != <string>
//	"key" in labels, "key" in params
//
// where <string> is a string literal, name, source, labels.<key>,
// labels["<key>"], params.<key> or params["<key>"]. It returns nil otherwise.
func nativeFrom(node ast.Node) nativePredicate {
	switch n := node.(type) {
	case *ast.BoolNode:
		v := n.Value
		return func(*Target) bool { return v }
	case *ast.UnaryNode:
		if n.Operator != "!" && n.Operator != "not" {
			return nil
		}
		inner := nativeFrom(n.Node)
		if inner == nil {
			return nil
		}
		return func(t *Target) bool { return !inner(t) }
	case *ast.BinaryNode:
		return nativeBinary(n)
	}
	return nil
}

func nativeBinary(n *ast.BinaryNode) nativePredicate {
	switch n.Operator {
	case "&&", "and", "||", "or":
		left, right := nativeFrom(n.Left), nativeFrom(n.Right)
		if left == nil || right == nil {
			return nil
		}
		if n.Operator == "&&" || n.Operator == "and" {
			return func(t *Target) bool { return left(t) && right(t) }
		}
		return func(t *Target) bool { return left(t) || right(t) }
	case "==", "!=":
		left, right := nativeString(n.Left), nativeString(n.Right)
		if left == nil || right == nil {
			return nil
		}
		if n.Operator == "==" {
			return func(t *Target) bool { return left(t) == right(t) }
		}
		return func(t *Target) bool { return left(t) != right(t) }
	case "in":
		key, ok := n.Left.(*ast.StringNode)
		id, ok2 := n.Right.(*ast.IdentifierNode)
		if !ok || !ok2 {
			return nil
		}
		k := key.Value
		switch id.Value {
		case "labels":
			return func(t *Target) bool { _, ok := t.Labels[k]; return ok }
		case "params":
			return func(t *Target) bool { _, ok := t.Params[k]; return ok }
		}
	}
	return nil
}

// nativeString compiles a string-valued operand, or returns nil.
func nativeString(node ast.Node) func(t *Target) string {
	switch n := node.(type) {
	case *ast.StringNode:
		v := n.Value
		return func(*Target) string { return v }
	case *ast.IdentifierNode:
		switch n.Value {
		case "name":
			return func(t *Target) string { return t.Name }
		case "source":
			return func(t *Target) string { return t.Source }
		}
	case *ast.MemberNode:
		if n.Optional || n.Method {
			return nil
		}
		id, ok := n.Node.(*ast.IdentifierNode)
		key, ok2 := n.Property.(*ast.StringNode)
		if !ok || !ok2 {
			return nil
		}
		k := key.Value
		switch id.Value {
		case "labels":
			return func(t *Target) string { return t.Labels[k] }
		case "params":
			return func(t *Target) string { return t.Params[k] }
		}
	}
	return nil
}
