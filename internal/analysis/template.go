package analysis

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// A query template is PromQL with placeholders that the wave's targets
// replace. A placeholder stands inside a quoted PromQL string, usually the
// value of a regex matcher:
//
//	{{targets.regex}}                    the ids of the wave's targets
//	{{targets.label "region" | regex}}   the distinct values of their label "region"
//	{{baseline.regex}}                   the ids of the baseline targets
//	{{baseline.label "region" | regex}}  the distinct values of their label "region"
//
// Each renders as `(?:v1|v2|...)`: every value escaped for a regular
// expression, then for the PromQL string around it, so a value can neither
// widen the match (`.*`, `|`) nor leave its string (`"}`). Placeholders are
// refused anywhere else (outside a string, in a raw backtick string, in a
// comment): there no escaping could keep a value in place.

// Bounds of templates and rendered queries.
const (
	// MaxQueryTemplateLength bounds a query template as written in a spec.
	MaxQueryTemplateLength = 8192
	// MaxValueLength bounds one substituted id or label value.
	MaxValueLength = 1024
	// MaxRenderedQueryLength bounds a rendered query. 10,000 targets with
	// 60-character ids fit; for larger sets select the complement
	// (`!~"{{targets.regex}}"`) instead of the baseline.
	MaxRenderedQueryLength = 1 << 20
)

// sampleValue is what Sample substitutes for a placeholder, padded with
// '_' before its closing parenthesis to the placeholder's length (a
// placeholder is at least 17 bytes long).
const sampleValue = "(?:sample)"

// TargetSet names a set of targets a placeholder refers to.
type TargetSet string

const (
	// SetTargets are the wave's targets.
	SetTargets TargetSet = "targets"
	// SetBaseline are the baseline targets: the fleet's targets that do not
	// run the new Freight yet.
	SetBaseline TargetSet = "baseline"
)

// Target is one target as a template sees it.
type Target struct {
	// ID is the target's id in the fleet.
	ID string
	// Labels are the target's labels.
	Labels map[string]string
}

// TargetSets are the targets a query is rendered for.
type TargetSets struct {
	// Targets are the wave's targets.
	Targets []Target
	// Baseline are the baseline targets.
	Baseline []Target
}

// swapped returns the sets with the baseline in place of the wave's targets:
// the default baseline query of a baseline metric.
func (s TargetSets) swapped() TargetSets {
	return TargetSets{Targets: s.Baseline, Baseline: s.Targets}
}

// ErrNoTargets is wrapped by Render when a placeholder's set holds no value
// to substitute: an empty regex would match every series without the label.
var ErrNoTargets = errors.New("no targets to substitute")

// Template is a parsed query template. It is immutable and safe for
// concurrent use.
type Template struct {
	source string
	parts  []templatePart
}

// templatePart is a literal run of the template or one placeholder.
type templatePart struct {
	literal     string
	placeholder *placeholder
}

// placeholder is one parsed `{{...}}`.
type placeholder struct {
	set TargetSet
	// label is the label whose values render; empty means the ids.
	label string
	// quote is the delimiter of the PromQL string around the placeholder.
	quote byte
	// text is the placeholder as written, for messages.
	text string
}

// placeholderSyntax is the whole grammar of a placeholder's inside.
var placeholderSyntax = regexp.MustCompile(`^\s*(targets|baseline)\.(?:(regex)|label\s+"([A-Za-z0-9_./-]{1,253})"\s*\|\s*regex)\s*$`)

// ParseTemplate parses a query template. Errors name the byte offset of
// the problem.
func ParseTemplate(source string) (*Template, error) {
	if len(source) > MaxQueryTemplateLength {
		return nil, fmt.Errorf("query is %d bytes long, more than %d", len(source), MaxQueryTemplateLength)
	}
	t := &Template{source: source}
	sc := promqlScanner{}
	literalStart := 0
	for i := 0; i < len(source); {
		if !strings.HasPrefix(source[i:], "{{") {
			sc.step(source[i])
			i++
			continue
		}
		end := strings.Index(source[i+2:], "}}")
		if end < 0 {
			return nil, fmt.Errorf("placeholder at offset %d has no closing }}", i)
		}
		text := source[i : i+2+end+2]
		ph, err := parsePlaceholder(text, sc, i)
		if err != nil {
			return nil, err
		}
		t.parts = append(t.parts, templatePart{literal: source[literalStart:i]}, templatePart{placeholder: ph})
		i += len(text)
		literalStart = i
	}
	if sc.state == scanString || sc.state == scanRawString {
		return nil, errors.New("query ends inside a string")
	}
	t.parts = append(t.parts, templatePart{literal: source[literalStart:]})
	return t, nil
}

// parsePlaceholder parses text, a whole `{{...}}` found at offset in the
// scanner's state.
func parsePlaceholder(text string, sc promqlScanner, offset int) (*placeholder, error) {
	m := placeholderSyntax.FindStringSubmatch(text[2 : len(text)-2])
	if m == nil {
		return nil, fmt.Errorf(`placeholder %s at offset %d: want {{targets.regex}}, {{baseline.regex}} or {{targets.label "name" | regex}}`, text, offset)
	}
	if sc.state != scanString || sc.escaped {
		return nil, fmt.Errorf(`placeholder %s at offset %d must stand inside a "double" or 'single' quoted string, e.g. cluster=~"%s"`, text, offset, text)
	}
	return &placeholder{set: TargetSet(m[1]), label: m[3], quote: sc.quote, text: text}, nil
}

// Source returns the template as written.
func (t *Template) Source() string { return t.source }

// Uses reports whether a placeholder of the template refers to set.
func (t *Template) Uses(set TargetSet) bool {
	for _, p := range t.parts {
		if p.placeholder != nil && p.placeholder.set == set {
			return true
		}
	}
	return false
}

// Render substitutes the target sets. It fails when a placeholder has no
// value to substitute (wrapping ErrNoTargets), when a value is not UTF-8 or
// longer than MaxValueLength, or when the query grows past
// MaxRenderedQueryLength.
func (t *Template) Render(sets TargetSets) (string, error) {
	values := make([][]string, len(t.parts))
	size := len(t.source)
	for i, p := range t.parts {
		if p.placeholder == nil {
			continue
		}
		var err error
		if values[i], err = p.placeholder.values(sets); err != nil {
			return "", err
		}
		for _, v := range values[i] {
			size += len(v) + 1
		}
		if size > MaxRenderedQueryLength {
			return "", errTooLong
		}
	}
	var b strings.Builder
	b.Grow(size + size/8) // room for escapes
	for i, p := range t.parts {
		if p.placeholder == nil {
			b.WriteString(p.literal)
			continue
		}
		b.WriteString("(?:")
		for j, v := range values[i] {
			if j > 0 {
				b.WriteByte('|')
			}
			writeEscapedValue(&b, v, p.placeholder.quote)
		}
		b.WriteByte(')')
	}
	if b.Len() > MaxRenderedQueryLength {
		return "", errTooLong
	}
	return b.String(), nil
}

// errTooLong is returned by Render for a query longer than
// MaxRenderedQueryLength.
var errTooLong = fmt.Errorf("the rendered query is longer than %d bytes: select the complement (!~) or fewer labels", MaxRenderedQueryLength)

// Sample renders every placeholder as one sample value, for a syntax check
// of the query without targets. The value is a regular expression without
// quotes or backslashes, so it is valid wherever a placeholder may stand:
// in a double- or single-quoted string, as a plain or regex match. It is as
// long as the placeholder it replaces, so a parser's byte offsets (and
// line:column, unless a placeholder spans lines) point into the template
// as written.
func (t *Template) Sample() string {
	var b strings.Builder
	b.Grow(len(t.source))
	for _, p := range t.parts {
		if p.placeholder == nil {
			b.WriteString(p.literal)
			continue
		}
		pad := max(len(p.placeholder.text)-len(sampleValue), 0)
		b.WriteString(sampleValue[:len(sampleValue)-1])
		b.WriteString(strings.Repeat("_", pad))
		b.WriteByte(')')
	}
	return b.String()
}

// values returns the distinct, sorted values the placeholder substitutes.
func (p *placeholder) values(sets TargetSets) ([]string, error) {
	targets := sets.Targets
	if p.set == SetBaseline {
		targets = sets.Baseline
	}
	values, err := placeholderValues(targets, p.label)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.text, err)
	}
	if len(values) == 0 {
		if p.label != "" && len(targets) > 0 {
			return nil, fmt.Errorf("%s: none of the %d %s has label %q: %w", p.text, len(targets), p.set, p.label, ErrNoTargets)
		}
		return nil, fmt.Errorf("%s: the %s set is empty: %w", p.text, p.set, ErrNoTargets)
	}
	return values, nil
}
