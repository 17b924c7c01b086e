// Package strutil bounds strings for the places that limit them: condition
// messages, annotations, Event notes, terminal columns.
package strutil

import (
	"fmt"
	"strconv"
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

// OneLine joins s's words with single spaces: a message on one line.
func OneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
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

// Quote quotes s as strconv.Quote does, in at most n bytes, quotes and
// escapes included (see AppendQuote).
func Quote(s string, n int) string {
	var buf [128]byte
	return string(AppendQuote(buf[:0], s, n))
}

// AppendQuote appends s quoted as by strconv.Quote, in at most n bytes,
// quotes and escapes included: it quotes character by character while they
// fit, since escaping can make one byte four, and never splits an escape.
// "..." after the closing quote marks a cut, so at most n+3 bytes are
// appended. n below 2 counts as 2.
func AppendQuote(dst []byte, s string, n int) []byte {
	start := len(dst)
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		_, size := utf8.DecodeRuneInString(s[i:])
		var buf [16]byte
		q := strconv.AppendQuote(buf[:0], s[i:i+size])
		q = q[1 : len(q)-1]
		if len(dst)-start+len(q)+1 > n {
			return append(dst, `"...`...)
		}
		dst = append(dst, q...)
		i += size
	}
	return append(dst, '"')
}
