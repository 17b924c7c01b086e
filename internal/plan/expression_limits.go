package plan

import (
	"fmt"

	"github.com/expr-lang/expr/ast"
)

// Target expressions are written by Project users and evaluated by the
// controller for every target, so evaluating one must never hang or exhaust
// memory. expr-lang bounds allocations of ranges and arrays (its memory
// budget) but not time, and not the growth of strings: `let` chains doubling
// a string, `reduce` accumulating one, nested loops over one array or
// repeated `replace`/`toJSON` can each run for hours or grow past any memory
// limit with a few dozen characters of input.
//
// checkExpressionLimits therefore admits a subset of the language where
// evaluation cost is bounded by the expression's size times the size of the
// target's data:
//
//   - no `let` (variables make repeated doubling cheap to write);
//   - only the builtins in allowedBuiltins: none of them makes its result much
//     larger than its input, and none reads the clock (`now` would make
//     planning depend on when it runs);
//   - no predicate inside a predicate (nested loops);
//   - ranges with constant bounds, of at most maxRangeLength numbers unless
//     they are the right side of `in` (`int(params.port) in 1024..65535` is a
//     comparison, not a loop).
//
// Everything a selection needs (comparisons, `in`, string tests, `matches`,
// conversions, `any`/`all` over labels or a literal list) stays available.

// maxRangeLength bounds ranges outside `in`.
const maxRangeLength = 1000

// allowedBuiltins are the builtins a target expression may call.
var allowedBuiltins = map[string]bool{
	// Predicates (one level).
	"all": true, "none": true, "any": true, "one": true, "filter": true, "map": true,
	"find": true, "findIndex": true, "findLast": true, "findLastIndex": true,
	"count": true, "sum": true, "groupBy": true, "sortBy": true,
	// Conversions and numbers.
	"len": true, "type": true, "abs": true, "ceil": true, "floor": true, "round": true,
	"int": true, "float": true, "string": true, "max": true, "min": true, "mean": true, "median": true,
	"bitand": true, "bitor": true, "bitxor": true, "bitnand": true, "bitnot": true,
	"bitshl": true, "bitshr": true, "bitushr": true,
	// Strings.
	"trim": true, "trimPrefix": true, "trimSuffix": true, "upper": true, "lower": true,
	"split": true, "splitAfter": true, "indexOf": true, "lastIndexOf": true,
	"hasPrefix": true, "hasSuffix": true, "fromJSON": true,
	// Collections.
	"first": true, "last": true, "get": true, "take": true, "keys": true, "values": true,
	"reverse": true, "sort": true, "concat": true, "flatten": true, "toPairs": true, "fromPairs": true,
}

// limitError is an expression outside the admitted subset.
type limitError struct {
	msg string
}

func (e *limitError) Error() string { return e.msg }

// checkExpressionLimits walks a parsed expression and returns the first
// construct outside the admitted subset.
func checkExpressionLimits(root ast.Node) error {
	c := &limitChecker{}
	c.walk(root, false)
	if c.err != nil {
		return c.err
	}
	return nil
}

type limitChecker struct {
	predicateDepth int
	err            error
}

func (c *limitChecker) fail(format string, args ...any) {
	if c.err == nil {
		c.err = &limitError{msg: fmt.Sprintf(format, args...)}
	}
}

// walk visits node; inOperand says whether node is the right side of `in`.
func (c *limitChecker) walk(node ast.Node, inOperand bool) {
	if node == nil || c.err != nil {
		return
	}
	switch n := node.(type) {
	case *ast.NilNode, *ast.IdentifierNode, *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode,
		*ast.StringNode, *ast.BytesNode, *ast.ConstantNode, *ast.PointerNode:
	case *ast.BinaryNode:
		if n.Operator == ".." {
			c.checkRange(n, inOperand)
		}
		c.walk(n.Left, false)
		c.walk(n.Right, n.Operator == "in")
	case *ast.BuiltinNode:
		if !allowedBuiltins[n.Name] {
			c.fail("function %s is not allowed in target expressions", n.Name)
			return
		}
		for _, a := range n.Arguments {
			c.walk(a, false)
		}
	case *ast.PredicateNode:
		if c.predicateDepth > 0 {
			c.fail("a predicate inside another predicate is not allowed in target expressions (nested loops)")
			return
		}
		c.predicateDepth++
		c.walk(n.Node, false)
		c.predicateDepth--
	case *ast.VariableDeclaratorNode:
		c.fail("let is not allowed in target expressions")
	default:
		operands, ok := operandsOf(node)
		if !ok {
			c.fail("unsupported syntax in target expressions (%T)", node)
			return
		}
		for _, o := range operands {
			c.walk(o, false)
		}
	}
}

// operandsOf lists, in evaluation order, the operands of the syntax that is
// admitted whenever its operands are; ok is false for syntax outside the
// subset.
func operandsOf(node ast.Node) (operands []ast.Node, ok bool) {
	switch n := node.(type) {
	case *ast.UnaryNode:
		return []ast.Node{n.Node}, true
	case *ast.ChainNode:
		return []ast.Node{n.Node}, true
	case *ast.MemberNode:
		return []ast.Node{n.Node, n.Property}, true
	case *ast.SliceNode:
		return []ast.Node{n.Node, n.From, n.To}, true
	case *ast.CallNode:
		return append([]ast.Node{n.Callee}, n.Arguments...), true
	case *ast.ConditionalNode:
		return []ast.Node{n.Cond, n.Exp1, n.Exp2}, true
	case *ast.SequenceNode:
		return n.Nodes, true
	case *ast.ArrayNode:
		return n.Nodes, true
	case *ast.MapNode:
		return n.Pairs, true
	case *ast.PairNode:
		return []ast.Node{n.Key, n.Value}, true
	}
	return nil, false
}

// checkRange admits ranges with integer literal bounds, short ones anywhere
// and long ones only as the right side of `in`.
func (c *limitChecker) checkRange(n *ast.BinaryNode, inOperand bool) {
	from, ok1 := constantInt(n.Left)
	to, ok2 := constantInt(n.Right)
	if !ok1 || !ok2 {
		c.fail("ranges in target expressions need integer literal bounds")
		return
	}
	if !inOperand && to-from >= maxRangeLength {
		c.fail("ranges in target expressions may hold at most %d numbers (except after in)", maxRangeLength)
	}
}

// constantInt reads an integer literal, possibly negated.
func constantInt(n ast.Node) (int, bool) {
	switch v := n.(type) {
	case *ast.IntegerNode:
		return v.Value, true
	case *ast.UnaryNode:
		if v.Operator == "-" {
			if i, ok := constantInt(v.Node); ok {
				return -i, true
			}
		}
	}
	return 0, false
}
