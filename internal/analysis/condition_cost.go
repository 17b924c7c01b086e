package analysis

import (
	"fmt"

	"github.com/expr-lang/expr/ast"
)

// A success condition is written by Project users and evaluated by the
// controller at every measurement, over as many samples as the query
// returned. Its cost must stay linear in that input: expr-lang bounds memory
// for ranges but not time, and a loop inside a loop over 10,000 samples, or
// `map` building an array per sample, would stall the controller.
//
// checkConditionCost admits conditions whose loops (the predicate builtins)
// are not nested and whose predicate bodies do not read the sample lists
// again; it refuses variables (`let`) and ranges (`1..n`), which no metric
// needs. The non-predicate builtins are limited by allowedConditionBuiltins
// at compile time.

// allowedPredicates are the predicate builtins a condition may use; the
// others (map, reduce, groupBy, sortBy, find*) build or search structures
// no threshold needs.
var allowedPredicates = map[string]bool{"all": true, "any": true, "none": true, "one": true, "filter": true, "count": true, "sum": true}

// sampleLists are the environment names that hold a sample list.
var sampleLists = map[string]bool{"values": true, "baselineValues": true}

// costVisitor records the first construct a condition may not use.
type costVisitor struct {
	// inPredicate is set while visiting the body of a predicate.
	inPredicate bool
	err         error
}

func (v *costVisitor) fail(format string, args ...any) {
	if v.err == nil {
		v.err = fmt.Errorf(format, args...)
	}
}

// Visit implements ast.Visitor.
func (v *costVisitor) Visit(node *ast.Node) {
	switch n := (*node).(type) {
	case *ast.VariableDeclaratorNode:
		v.fail("let is not allowed in a success condition")
	case *ast.BinaryNode:
		if n.Operator == ".." {
			v.fail("ranges are not allowed in a success condition")
		}
	case *ast.IdentifierNode:
		if n.Value == "$env" {
			v.fail("$env is not allowed in a success condition")
		}
		if v.inPredicate && sampleLists[n.Value] {
			v.fail("a predicate may not read %s again (a loop inside a loop)", n.Value)
		}
	case *ast.BuiltinNode:
		if len(n.Arguments) < 2 {
			return
		}
		if _, isPredicate := n.Arguments[1].(*ast.PredicateNode); !isPredicate {
			return
		}
		if !allowedPredicates[n.Name] {
			v.fail("%s is not allowed in a success condition", n.Name)
			return
		}
		if v.inPredicate {
			v.fail("a predicate inside a predicate is not allowed in a success condition")
			return
		}
		body := &costVisitor{inPredicate: true}
		ast.Walk(&n.Arguments[1], body)
		if body.err != nil {
			v.fail("%v", body.err)
		}
	}
}

// checkConditionCost returns the first construct of the parsed condition
// outside the admitted subset.
func checkConditionCost(root ast.Node) error {
	v := &costVisitor{}
	ast.Walk(&root, v)
	return v.err
}
