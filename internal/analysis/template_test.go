package analysis

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseTemplate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		source  string
		wantErr string
	}{
		{name: "ids", source: `up{cluster=~"{{targets.regex}}"}`},
		{name: "spaces", source: `up{cluster=~"{{ targets.regex }}"}`},
		{name: "label", source: `up{region=~"{{targets.label "topology.kubernetes.io/region" | regex}}"}`},
		{name: "single quotes", source: `up{cluster=~'{{baseline.regex}}'}`},
		{name: "inside other text", source: `up{cluster=~"prod-{{targets.regex}}-.*"}`},
		{name: "no placeholder", source: `up`},
		{name: "after an escaped quote", source: `up{a="\"", cluster=~"{{targets.regex}}"}`},
		{name: "outside a string", source: `up{cluster=~{{targets.regex}}}`, wantErr: "must stand inside"},
		{name: "in a raw string", source: "up{cluster=~`{{targets.regex}}`}", wantErr: "must stand inside"},
		{name: "in a comment", source: "up # {{targets.regex}}\n", wantErr: "must stand inside"},
		{name: "after a closed string", source: `up{a="b"} + {{targets.regex}}`, wantErr: "must stand inside"},
		{name: "after a backslash", source: `up{cluster=~"\{{targets.regex}}"}`, wantErr: "must stand inside"},
		{name: "unknown set", source: `up{cluster=~"{{fleet.regex}}"}`, wantErr: "want {{targets.regex}}"},
		{name: "unknown filter", source: `up{cluster=~"{{targets.label "x" | upper}}"}`, wantErr: "want {{targets.regex}}"},
		{name: "template code", source: `up{cluster=~"{{range .}}{{.}}{{end}}"}`, wantErr: "want {{targets.regex}}"},
		{name: "label with a quote", source: `up{cluster=~"{{targets.label "a\"b" | regex}}"}`, wantErr: "want {{targets.regex}}"},
		{name: "unclosed", source: `up{cluster=~"{{targets.regex"}`, wantErr: "no closing }}"},
		{name: "ends in a string", source: `up{cluster=~"abc}`, wantErr: "ends inside a string"},
		{name: "too long", source: strings.Repeat("u", MaxQueryTemplateLength+1), wantErr: "more than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tmpl, err := ParseTemplate(tt.source)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.source, tmpl.Source())
		})
	}
}

func TestTemplate_Render(t *testing.T) {
	t.Parallel()
	sets := TargetSets{
		Targets: []Target{
			{ID: "prod-b", Labels: map[string]string{"region": "eu"}},
			{ID: "prod-a", Labels: map[string]string{"region": "eu"}},
			{ID: "prod-c"},
		},
		Baseline: []Target{{ID: "prod-d", Labels: map[string]string{"region": "us"}}},
	}
	tests := []struct {
		name    string
		source  string
		sets    TargetSets
		want    string
		wantErr string
	}{
		{name: "ids sorted", source: `up{cluster=~"{{targets.regex}}"}`, sets: sets, want: `up{cluster=~"(?:prod-a|prod-b|prod-c)"}`},
		{name: "label values distinct", source: `up{region=~"{{targets.label "region" | regex}}"}`, sets: sets, want: `up{region=~"(?:eu)"}`},
		{name: "baseline", source: `up{cluster=~"{{baseline.regex}}"}`, sets: sets, want: `up{cluster=~"(?:prod-d)"}`},
		{name: "both", source: `up{c=~"{{targets.regex}}"} / up{c=~'{{baseline.regex}}'}`, sets: sets, want: `up{c=~"(?:prod-a|prod-b|prod-c)"} / up{c=~'(?:prod-d)'}`},
		{name: "grouped inside other text", source: `up{c=~"x-{{targets.regex}}"}`, sets: sets, want: `up{c=~"x-(?:prod-a|prod-b|prod-c)"}`},
		{
			// The value may not leave the string nor widen the regex.
			name:   "injection in double quotes",
			source: `up{cluster=~"{{targets.regex}}"}`,
			sets:   TargetSets{Targets: []Target{{ID: `a"} or vector(1) #`}, {ID: `|.*`}, {ID: `b\`}}},
			want:   `up{cluster=~"(?:a\"\\} or vector\\(1\\) #|b\\\\|\\|\\.\\*)"}`,
		},
		{
			name:   "injection in single quotes",
			source: `up{cluster=~'{{targets.regex}}'}`,
			sets:   TargetSets{Targets: []Target{{ID: `a'} or "x"`}}},
			want:   `up{cluster=~'(?:a\'\\} or "x")'}`,
		},
		{
			name:   "control characters and U+FFFD escaped",
			source: `up{cluster=~"{{targets.regex}}"}`,
			sets:   TargetSets{Targets: []Target{{ID: "a\nb\tc\u2028\ufffd\x7f"}}},
			want:   `up{cluster=~"(?:a\x0ab\x09c\u2028\ufffd\x7f)"}`,
		},
		{name: "unicode kept", source: `up{c=~"{{targets.regex}}"}`, sets: TargetSets{Targets: []Target{{ID: "zürich-東京"}}}, want: `up{c=~"(?:zürich-東京)"}`},
		{name: "empty targets", source: `up{c=~"{{targets.regex}}"}`, sets: TargetSets{}, wantErr: "the targets set is empty"},
		{name: "empty baseline", source: `up{c=~"{{baseline.regex}}"}`, sets: TargetSets{Targets: sets.Targets}, wantErr: "the baseline set is empty"},
		{name: "no target has the label", source: `up{c=~"{{targets.label "zone" | regex}}"}`, sets: sets, wantErr: `none of the 3 targets has label "zone"`},
		{name: "empty id", source: `up{c=~"{{targets.regex}}"}`, sets: TargetSets{Targets: []Target{{ID: ""}}}, wantErr: "empty id"},
		{name: "invalid UTF-8", source: `up{c=~"{{targets.regex}}"}`, sets: TargetSets{Targets: []Target{{ID: "a\xffb"}}}, wantErr: "not valid UTF-8"},
		{name: "value too long", source: `up{c=~"{{targets.regex}}"}`, sets: TargetSets{Targets: []Target{{ID: strings.Repeat("a", MaxValueLength+1)}}}, wantErr: "longer than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tmpl, err := ParseTemplate(tt.source)
			require.NoError(t, err)
			got, err := tmpl.Render(tt.sets)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestTemplate_Render_emptySetWrapsErrNoTargets(t *testing.T) {
	t.Parallel()
	tmpl, err := ParseTemplate(`up{c=~"{{baseline.regex}}"}`)
	require.NoError(t, err)
	_, err = tmpl.Render(TargetSets{Targets: targets("a")})
	require.True(t, errors.Is(err, ErrNoTargets))
}

func TestTemplate_Render_tooLong(t *testing.T) {
	t.Parallel()
	tmpl, err := ParseTemplate(`up{c=~"{{targets.regex}}"}`)
	require.NoError(t, err)
	var many []Target
	for i := range 1100 {
		many = append(many, Target{ID: fmt.Sprintf("%s-%d", strings.Repeat("x", 1000), i)})
	}
	_, err = tmpl.Render(TargetSets{Targets: many})
	require.ErrorContains(t, err, "longer than")
}

func TestTemplate_Render_matchesExactlyTheTargets(t *testing.T) {
	t.Parallel()
	tmpl, err := ParseTemplate(`up{c=~"{{targets.regex}}"}`)
	require.NoError(t, err)
	ids := []string{"a.b", "a", "(x)", "[y]", "^z$", "p+q?", `back\slash`}
	var sets TargetSets
	for _, id := range ids {
		sets.Targets = append(sets.Targets, Target{ID: id})
	}
	got, err := tmpl.Render(sets)
	require.NoError(t, err)
	re := renderedRegexp(t, got, `up{c=~`, `}`)
	for _, id := range ids {
		require.True(t, re.MatchString(id), id)
	}
	for _, other := range []string{"axb", "", "x", "y", "z", "ppq", "a.bc", "back"} {
		require.False(t, re.MatchString(other), other)
	}
}

func TestTemplate_SampleAndUses(t *testing.T) {
	t.Parallel()
	tmpl, err := ParseTemplate(`up{c=~"{{targets.regex}}", r=~"{{baseline.label "region" | regex}}"}`)
	require.NoError(t, err)
	// Each sample value is as long as its placeholder: offsets in the
	// sample are offsets in the template.
	require.Equal(t, `up{c=~"(?:sample_______)", r=~"(?:sample_________________________)"}`, tmpl.Sample())
	require.Len(t, tmpl.Sample(), len(tmpl.Source()))
	require.True(t, tmpl.Uses(SetTargets))
	require.True(t, tmpl.Uses(SetBaseline))
	plain, err := ParseTemplate(`up`)
	require.NoError(t, err)
	require.False(t, plain.Uses(SetTargets))
}

// renderedRegexp reads back the regex a rendered query holds between
// prefix and suffix, the way PromQL would: the double-quoted string is
// unquoted with Go's rules (PromQL's for double quotes), then anchored.
func renderedRegexp(t testing.TB, rendered, prefix, suffix string) *regexp.Regexp {
	t.Helper()
	body, ok := stringLiteralBetween(rendered, prefix, suffix)
	require.True(t, ok, "rendered query %q is not %s<one string literal>%s", rendered, prefix, suffix)
	return regexp.MustCompile("^(?:" + body + ")$")
}
