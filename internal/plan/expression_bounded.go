package plan

import (
	"github.com/expr-lang/expr/conf"
	"github.com/expr-lang/expr/parser"
)

// MaxExpressionNodes bounds the size of any compiled expression of the
// fleet's API (target selections, waves, FreightPolicy rules).
const MaxExpressionNodes = maxExpressionNodes

// CheckBounded parses source and checks it stays within the subset of
// expr-lang whose evaluation cost is bounded (checkExpressionLimits), so
// that other expressions of the API (FreightPolicy rules) obey the same
// limits as target expressions.
func CheckBounded(source string) error {
	cfg := conf.CreateNew()
	cfg.MaxNodes = maxExpressionNodes
	tree, err := parser.ParseWithConfig(source, cfg)
	if err != nil {
		return err
	}
	return checkExpressionLimits(tree.Node)
}

// FirstLine is the first line of an expr-lang error: the message and its
// position, without the source and caret that follow.
func FirstLine(err error) string {
	return firstLine(err)
}
