// Package strutil bounds strings for the places that limit them: condition
// messages, annotations, Event notes, terminal columns.
package strutil

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Truncate cuts s to at most n bytes, never inside a UTF-8 sequence.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n <= 0 {
		return ""
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// Ellipsis cuts s to at most n bytes like Truncate and marks the cut with
// "...", so a reader knows the text goes on.
func Ellipsis(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n <= 3 {
		return Truncate(s, n)
	}
	return Truncate(s, n-3) + "..."
}

// EllipsisRunes cuts s to at most n characters (runes), the last one "…":
// for terminal columns, where a character, not a byte, takes a cell.
func EllipsisRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	if n <= 0 {
		return ""
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// Sample lists up to n names, then how many more there are: Events and
// messages name a few targets, never thousands.
func Sample(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:n], ", "), len(names)-n)
}
