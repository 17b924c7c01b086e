package plan

import (
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"

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

// quoteValue quotes user data for a message (see appendQuotedValue).
func quoteValue(s string) string {
	var buf [maxMessageValue + 3]byte
	return string(appendQuotedValue(buf[:0], s))
}

// valueMessage is prefix, value quoted by appendQuotedValue, then suffix,
// built in one allocation: every target of a fleet may get such a message.
func valueMessage(prefix, value string, suffix ...string) string {
	var buf [512]byte
	b := append(buf[:0], prefix...)
	b = appendQuotedValue(b, value)
	for _, s := range suffix {
		b = append(b, s...)
	}
	return string(b)
}

// appendQuotedValue appends s quoted as by strconv.Quote, at most
// maxMessageValue bytes of it: it quotes character by character while they
// fit, since escaping can make one byte four. "..." after the closing quote
// marks a cut.
func appendQuotedValue(dst []byte, s string) []byte {
	start := len(dst)
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		_, size := utf8.DecodeRuneInString(s[i:])
		var buf [16]byte
		q := strconv.AppendQuote(buf[:0], s[i:i+size])
		q = q[1 : len(q)-1]
		if len(dst)-start+len(q)+1 > maxMessageValue {
			return append(dst, `"...`...)
		}
		dst = append(dst, q...)
		i += size
	}
	return append(dst, '"')
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
