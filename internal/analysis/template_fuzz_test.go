package analysis

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzTemplateRender renders a fixed template for arbitrary target ids and
// checks that no id can inject anything: the rendered query is the
// template's text around exactly one well-formed string literal (so its
// PromQL structure is the template's), and the regex in that literal
// matches exactly the ids, each literally.
func FuzzTemplateRender(f *testing.F) {
	for _, seed := range [][2]string{
		{"prod-eu-1", "prod-us-2"},
		{`a"} or vector(1) #`, `|.*`},
		{`\`, `\"`},
		{"{{targets.regex}}", "}}"},
		{".*", "(?:x)"},
		{"new\nline", "tab\t"},
		{"\ufffd", "\u2028"},
		{"é", "x\x00y"},
		{"`raw`", "'single'"},
		{"$1", "^$"},
	} {
		f.Add(seed[0], seed[1])
	}
	const prefix, suffix = `sum(rate(errors{cluster=~`, `, code=~"5.."}[5m]))`
	tmpl, err := ParseTemplate(prefix + `"{{targets.regex}}"` + suffix)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		sets := TargetSets{Targets: []Target{{ID: a}, {ID: b}}}
		got, err := tmpl.Render(sets)
		if err != nil {
			// Refused values: empty, invalid UTF-8 or too long.
			for _, v := range []string{a, b} {
				if v == "" || !utf8.ValidString(v) || len(v) > MaxValueLength {
					return
				}
			}
			t.Fatalf("rendering %q, %q: %v", a, b, err)
		}
		body, ok := stringLiteralBetween(got, prefix, suffix)
		if !ok {
			t.Fatalf("rendered query %q is not the template around one string literal", got)
		}
		re, err := regexp.Compile("^(?:" + body + ")$")
		if err != nil {
			t.Fatalf("the regex %q of %q does not compile: %v", body, got, err)
		}
		for _, v := range []string{a, b} {
			if !re.MatchString(v) {
				t.Fatalf("the regex %q does not match %q", body, v)
			}
		}
		for _, probe := range []string{a + "x", "x" + b, "", a + b, ".", "anything"} {
			if probe != a && probe != b && re.MatchString(probe) {
				t.Fatalf("the regex %q of ids %q, %q also matches %q", body, a, b, probe)
			}
		}
	})
}

// stringLiteralBetween returns the value of the one double-quoted string
// literal s holds between prefix and suffix, read with Go's rules (which
// are PromQL's for double-quoted strings), and whether s has that shape.
func stringLiteralBetween(s, prefix, suffix string) (string, bool) {
	if !strings.HasPrefix(s, prefix) || !strings.HasSuffix(s, suffix) {
		return "", false
	}
	middle := s[len(prefix) : len(s)-len(suffix)]
	lit, err := strconv.QuotedPrefix(middle)
	if err != nil || lit != middle || !strings.HasPrefix(lit, `"`) {
		return "", false
	}
	// PromQL refuses a literal newline and U+FFFD in a string, Go only the
	// newline; neither may appear unescaped.
	if strings.ContainsAny(lit, "\n\ufffd") {
		return "", false
	}
	v, err := strconv.Unquote(lit)
	return v, err == nil
}
