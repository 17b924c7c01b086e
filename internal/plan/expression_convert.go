package plan

import (
	"errors"
	"strconv"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
)

// Params are strings, so expressions compare numbers through int() and
// float(): `int(params.cells) > 2`. On a string that is not a number,
// expr-lang's builtins fail with a message holding the whole string, which
// its VM formats twice more: a 64 KiB param cost some 300 KiB per target,
// for every target carrying it. The patcher below rewrites int(<string>) and
// float(<string>) into calls of two functions that convert exactly as the
// builtins do but fail with a bounded message, without copying the string.

const (
	intFunc   = "__fleetInt"
	floatFunc = "__fleetFloat"
	// maxNumberLength is the longest string converted without checking it
	// first: strconv copies a string it cannot convert into its error.
	maxNumberLength = 32
	// maxIntDigits is the most digits an int has, past sign and leading zeros.
	maxIntDigits = 19
)

var errConvertArguments = errors.New("internal conversion called with unexpected arguments")

// convertFunctions declares the conversions with their types.
var convertFunctions = []expr.Option{
	expr.Function(intFunc, func(args ...any) (any, error) {
		s, ok := args[0].(string)
		if !ok {
			return nil, errConvertArguments
		}
		return parseInt(s)
	}, new(func(string) int)),
	expr.Function(floatFunc, func(args ...any) (any, error) {
		s, ok := args[0].(string)
		if !ok {
			return nil, errConvertArguments
		}
		return parseFloat(s)
	}, new(func(string) float64)),
}

// conversionPatcher rewrites int() and float() of a string into the
// conversions above. It runs after mapLookupPatcher, on a checked tree.
type conversionPatcher struct{}

// Visit implements ast.Visitor.
func (conversionPatcher) Visit(node *ast.Node) {
	b, ok := (*node).(*ast.BuiltinNode)
	if !ok || len(b.Arguments) != 1 {
		return
	}
	var fn string
	switch b.Name {
	case "int":
		fn = intFunc
	case "float":
		fn = floatFunc
	default:
		return
	}
	if t := b.Arguments[0].Type(); t == nil || t != stringType {
		return
	}
	ast.Patch(node, &ast.CallNode{Callee: &ast.IdentifierNode{Value: fn}, Arguments: b.Arguments})
}

// parseInt is strconv.Atoi, as the int builtin calls it, with a bounded
// error. A long string is an int only if at most maxIntDigits digits follow
// its sign and leading zeros; only those reach strconv.
func parseInt(s string) (int, error) {
	in := s
	if len(s) > maxNumberLength {
		sign, digits := "", s
		if digits[0] == '+' || digits[0] == '-' {
			sign, digits = digits[:1], digits[1:]
		}
		digits = strings.TrimLeft(digits, "0")
		if len(digits) > maxIntDigits {
			return 0, conversionError(intError, in)
		}
		if digits == "" {
			digits = "0"
		}
		s = sign + digits
	}
	i, err := strconv.Atoi(s)
	if err != nil {
		return 0, conversionError(intError, in)
	}
	return i, nil
}

// parseFloat is strconv.ParseFloat, as the float builtin calls it, with a
// bounded error. A long string with a byte no float syntax uses (decimal,
// hexadecimal, inf, nan) fails without reaching strconv.
func parseFloat(s string) (float64, error) {
	if len(s) > maxNumberLength {
		for i := 0; i < len(s); i++ {
			if !floatByte(s[i]) {
				return 0, conversionError(floatError, s)
			}
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, conversionError(floatError, s)
	}
	return f, nil
}

// floatByte reports whether c may appear in a string strconv.ParseFloat
// accepts.
func floatByte(c byte) bool {
	switch {
	case '0' <= c && c <= '9', 'a' <= c && c <= 'f', 'A' <= c && c <= 'F':
		return true
	}
	return strings.IndexByte("+-._xXpPiInNtTyY", c) >= 0
}

// The builtins' errors start so.
const (
	intError   = "invalid operation: int("
	floatError = "invalid operation: float("
)

// conversionError is a builtin's error, with s quoted and bounded.
func conversionError(prefix, s string) error {
	return errors.New(valueMessage(prefix, s, ")"))
}
