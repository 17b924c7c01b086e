package report

import (
	"strings"
	"unicode/utf8"
)

// minWrapWidth is the narrowest column a message is wrapped to, however
// deep it is indented: below it a message is more ellipsis than text.
const minWrapWidth = 30

// wrapMessage lays a message out in lines of at most width characters,
// breaking between words, over at most maxLines lines. A message too long
// for that keeps its beginning and its end, joined by " … ": Kargo's and
// Argo CD's messages name the object first and say what went wrong last
// ("Argo CD Application "c01" in namespace "argocd" is not authorized ..."),
// so neither end may be cut away.
func wrapMessage(s string, width, maxLines int) []string {
	s = oneLine(s)
	width = max(width, minWrapWidth)
	maxLines = max(maxLines, 1)
	if lines := wrapWords(s, width); len(lines) <= maxLines {
		return lines
	}
	for n := width * maxLines; n > 3; n -= max(width/8, 1) {
		if lines := wrapWords(elideMiddle(s, n), width); len(lines) <= maxLines {
			return lines
		}
	}
	return []string{elideMiddle(s, width)}
}

// elideMiddle cuts s to at most n characters, keeping about a third of
// them from its beginning and the rest from its end, cut between words.
func elideMiddle(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	const sep = " … "
	keep := n - utf8.RuneCountInString(sep)
	if keep <= 0 {
		return string(r[:n])
	}
	head := string(r[:keep/3])
	tail := string(r[len(r)-(keep-keep/3):])
	// Cut between words where a word boundary is near.
	if i := strings.LastIndexByte(head, ' '); i > len(head)/2 {
		head = head[:i]
	}
	if i := strings.IndexByte(tail, ' '); i >= 0 && i < len(tail)/2 {
		tail = tail[i+1:]
	}
	return strings.TrimRight(head, " ") + sep + strings.TrimLeft(tail, " ")
}

// wrapWords breaks s into lines of at most width characters between words;
// a word longer than a line is split.
func wrapWords(s string, width int) []string {
	var lines []string
	var line []rune
	for _, word := range strings.Fields(s) {
		w := []rune(word)
		if len(line) > 0 && len(line)+1+len(w) <= width {
			line = append(append(line, ' '), w...)
			continue
		}
		if len(line) > 0 {
			lines = append(lines, string(line))
		}
		for len(w) > width {
			lines = append(lines, string(w[:width]))
			w = w[width:]
		}
		line = w
	}
	if len(line) > 0 || len(lines) == 0 {
		lines = append(lines, string(line))
	}
	return lines
}
