package analysis

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// scanState is where a promqlScanner stands in a query.
type scanState int

const (
	scanCode scanState = iota
	scanString
	scanRawString
	scanComment
)

// promqlScanner follows PromQL's lexical structure far enough to know
// whether a byte stands in code, in a quoted string (and which quote), in a
// raw string or in a comment: the context that decides how a placeholder
// must be escaped.
type promqlScanner struct {
	state   scanState
	quote   byte
	escaped bool
}

// step advances the scanner over c.
func (s *promqlScanner) step(c byte) {
	switch s.state {
	case scanCode:
		switch c {
		case '"', '\'':
			s.state, s.quote = scanString, c
		case '`':
			s.state = scanRawString
		case '#':
			s.state = scanComment
		}
	case scanString:
		switch {
		case s.escaped:
			s.escaped = false
		case c == '\\':
			s.escaped = true
		case c == s.quote:
			s.state = scanCode
		}
	case scanRawString:
		if c == '`' {
			s.state = scanCode
		}
	case scanComment:
		if c == '\n' {
			s.state = scanCode
		}
	}
}

// placeholderValues returns the distinct, sorted values a placeholder
// substitutes: the targets' ids, or the values of their label (targets
// without it, or with an empty value, are left out: an empty alternative
// would match series without the label).
func placeholderValues(targets []Target, label string) ([]string, error) {
	values := make([]string, 0, len(targets))
	for _, t := range targets {
		v := t.ID
		if label != "" {
			v = t.Labels[label]
			if v == "" {
				continue
			}
		} else if v == "" {
			return nil, errors.New("a target has an empty id")
		}
		if len(v) > MaxValueLength {
			return nil, fmt.Errorf("value %.40q... is longer than %d bytes", v, MaxValueLength)
		}
		if !utf8.ValidString(v) {
			return nil, fmt.Errorf("value %q is not valid UTF-8", v)
		}
		values = append(values, v)
	}
	slices.Sort(values)
	return slices.Compact(values), nil
}

// regexMeta are the bytes RE2 gives a meaning (what regexp.QuoteMeta
// escapes).
const regexMeta = `\.+*?()|[]{}^$`

// isPlainASCII marks the printable ASCII bytes that need no escape in a
// regex nor in a string of either quote.
var isPlainASCII = func() (plain [utf8.RuneSelf]bool) {
	for c := byte(' '); c < 0x7f; c++ {
		plain[c] = strings.IndexByte(regexMeta, c) < 0 && c != '"' && c != '\''
	}
	return plain
}()

// writeEscapedValue writes v as a literal regular expression inside a
// PromQL string delimited by quote, in one pass: each regex metacharacter
// gets a backslash (itself escaped for the string, `\\`), then the string
// escapes apply. PromQL's lexer takes any UTF-8 rune literally except a
// newline, the quote, a backslash (which starts an escape) and U+FFFD (its
// marker of invalid input); those, and every other non-printable rune, are
// written as escapes so the string ends exactly where the template says.
// Only the active quote may be escaped: PromQL refuses `\'` in a
// double-quoted string.
func writeEscapedValue(b *strings.Builder, v string, quote byte) {
	for _, r := range v {
		switch {
		case r < utf8.RuneSelf && isPlainASCII[r]:
			b.WriteByte(byte(r))
		case r < utf8.RuneSelf && strings.IndexByte(regexMeta, byte(r)) >= 0:
			b.WriteString(`\\`)
			if r == '\\' {
				b.WriteString(`\\`)
			} else {
				b.WriteByte(byte(r))
			}
		case r == rune(quote):
			b.WriteByte('\\')
			b.WriteByte(quote)
		case r == utf8.RuneError || !unicode.IsPrint(r):
			writeRuneEscape(b, r)
		default:
			b.WriteRune(r)
		}
	}
}

// writeRuneEscape writes r as a \x, \u or \U escape.
func writeRuneEscape(b *strings.Builder, r rune) {
	switch {
	case r < 0x80:
		fmt.Fprintf(b, `\x%02x`, r)
	case r <= 0xFFFF:
		fmt.Fprintf(b, `\u%04x`, r)
	default:
		fmt.Fprintf(b, `\U%08x`, r)
	}
}
