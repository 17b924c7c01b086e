package plan

import (
	"errors"
	"strconv"
	"strings"

	"github.com/expr-lang/expr/file"

	"github.com/kargo-fleet/kargo-fleet/internal/strutil"
)

// Messages about targets (exclusions, evaluation errors) quote inventory
// data, which can be arbitrarily long: a param, a label of an Inline target,
// an expression result. Every target of a fleet may carry a hostile value, and
// the plan keeps a message per excluded target, so a message quotes at most a
// short, recognisable prefix of a value, and its constant parts are not
// rebuilt for every target.
const (
	// maxMessageValue bounds a quoted value in a message, quotes and escapes
	// included: a shard name (at most 63 characters) fits.
	maxMessageValue = 67
	// maxEvaluationError bounds an expression evaluation error in a message.
	maxEvaluationError = 256
	// maxMessageTeams bounds the allowed teams a message lists.
	maxMessageTeams = 5
	// maxTeamsText bounds the list of allowed teams in a message.
	maxTeamsText = 128
)

// quoteValue quotes user data for a message, in at most maxMessageValue
// bytes (strutil.Quote).
func quoteValue(s string) string {
	return strutil.Quote(s, maxMessageValue)
}

// valueMessage is prefix, value quoted like quoteValue, then suffix, built in
// one allocation: every target of a fleet may get such a message.
func valueMessage(prefix, value string, suffix ...string) string {
	var buf [512]byte
	b := append(buf[:0], prefix...)
	b = strutil.AppendQuote(b, value, maxMessageValue)
	for _, s := range suffix {
		b = append(b, s...)
	}
	return string(b)
}

// evaluationError is prefix then an expression evaluation error, for a
// message: the error's first line, at most maxEvaluationError bytes.
// expr-lang errors may quote target data (a failing conversion quotes its
// argument), and their full text repeats the expression with a caret, so an
// expr-lang error's own message and position are used without rendering the
// rest. The result takes one allocation and keeps no longer error alive.
func evaluationError(prefix string, err error) string {
	var fe *file.Error
	if !errors.As(err, &fe) {
		return withPrefix(prefix, firstLineBounded(err.Error()))
	}
	line := firstLineBounded(fe.Message)
	if fe.Snippet == "" {
		return withPrefix(prefix, line)
	}
	return prefix + line + " (" + strconv.Itoa(fe.Line) + ":" + strconv.Itoa(fe.Column+1) + ")"
}

// withPrefix is prefix+line in memory of its own: line may be cut from a
// long error, which Go's concatenation would keep alive for an empty prefix.
func withPrefix(prefix, line string) string {
	if prefix == "" {
		return strings.Clone(line)
	}
	return prefix + line
}

// firstLineBounded is the first line of s, trimmed, at most
// maxEvaluationError bytes.
func firstLineBounded(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return strutil.Ellipsis(strings.TrimSpace(line), maxEvaluationError)
}

// allowedTeamsText lists the allowed teams for an exclusion message: the
// first maxMessageTeams in order, at most maxTeamsText bytes.
func allowedTeamsText(teams TeamSet) string {
	return strutil.Ellipsis(strutil.Sample(teams.Sorted(), maxMessageTeams), maxTeamsText)
}
