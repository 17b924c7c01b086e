package promqlcheck

import (
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/kargo-fleet/kargo-fleet/internal/analysis"
)

// lenient accepts everything some Prometheus server may be configured to
// accept: experimental functions (--enable-feature=promql-experimental-functions),
// fill modifiers of binary operators and unquoted UTF-8 names. Admission
// refuses only what no configuration of the server would run; whatever
// the server at hand does not support is reported by the first measurement.
var lenient = parser.NewParser(parser.Options{
	EnableExperimentalFunctions: true,
	EnableBinopFillModifiers:    true,
	EnableUnquotedUTF8Names:     true,
})

// Check parses query as Prometheus does and returns the parser's first
// error, e.g. `1:14: parse error: unclosed left parenthesis`, or nil.
func Check(query string) error {
	_, err := lenient.ParseExpr(query)
	return err
}

var _ analysis.QueryChecker = Check
