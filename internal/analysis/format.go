package analysis

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// maxReasonLength bounds a reason: reasons go into conditions, Events and
// Stage descriptions.
const maxReasonLength = 1024

// maxListedItems bounds the series or targets a reason names.
const maxListedItems = 3

// formatValue writes a measured value for people: four significant digits.
func formatValue(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// formatLabels writes a label set the way PromQL does, keys sorted.
func formatLabels(labels map[string]string) string {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s=%q", k, labels[k])
	}
	b.WriteByte('}')
	return b.String()
}

// listSome joins the first maxListedItems items and says how many more
// there are.
func listSome(items []string) string {
	if len(items) <= maxListedItems {
		return strings.Join(items, "; ")
	}
	return fmt.Sprintf("%s; and %d more", strings.Join(items[:maxListedItems], "; "), len(items)-maxListedItems)
}

// truncateReason bounds a reason to maxReasonLength bytes without cutting a
// rune.
func truncateReason(s string) string {
	if len(s) <= maxReasonLength {
		return s
	}
	cut := maxReasonLength - len("...")
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// isRuneStart reports whether b can start a UTF-8 encoded rune.
func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// withWarnings appends Prometheus's warnings to a reason.
func withWarnings(reason string, warnings []string) string {
	if len(warnings) == 0 {
		return reason
	}
	return reason + " (Prometheus warned: " + listSome(warnings) + ")"
}

// plural writes n and the noun, with an s unless n is one.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
