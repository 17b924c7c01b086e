package report

import (
	"cmp"
	"strings"
	"unicode/utf8"

	"github.com/kargo-fleet/kargo-fleet/internal/strutil"
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
	s = strutil.OneLine(s)
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

// FitLines lays text out in lines of at most width visible columns (ANSI
// colour sequences take none), so that a terminal of that width wraps
// nothing and a redraw in place stays in place. A longer line is broken
// between words, after a comma where one is near the end, and goes on
// indented: under its label column ("  Targets   ...") or two columns deeper
// than it starts. A line with no room to break (a long URL) is kept whole.
// width <= 0 leaves text as it is.
func FitLines(text string, width int) string {
	if width <= 0 {
		return text
	}
	lines := strings.Split(text, "\n")
	out := make([]string, 0, len(lines))
	for _, line := range lines {
		out = append(out, fitLine(line, width)...)
	}
	return strings.Join(out, "\n")
}

// fitLine breaks one line into lines of at most width visible columns.
func fitLine(line string, width int) []string {
	if visibleLen(line) <= width {
		return []string{line}
	}
	indent := continuationIndent(line, width)
	var out []string
	for visibleLen(line) > width {
		cut := breakAt(line, width, len(line)-len(strings.TrimLeft(line, " ")))
		if cut < 0 {
			break
		}
		out = append(out, strings.TrimRight(line[:cut], " "))
		line = strings.Repeat(" ", indent) + strings.TrimLeft(line[cut:], " ")
	}
	return append(out, line)
}

// continuationIndent is the column the rest of a broken line starts at.
func continuationIndent(line string, width int) int {
	lead := len(line) - len(strings.TrimLeft(line, " "))
	indent := lead + 2
	// A label column: "  Targets   203 candidates, ..." goes on under "203".
	rest := line[lead:]
	if word := strings.IndexByte(rest, ' '); word > 0 && strings.HasPrefix(rest[word:], "  ") {
		if col := lead + word + len(rest[word:]) - len(strings.TrimLeft(rest[word:], " ")); col <= 14 {
			indent = col
		}
	}
	return min(indent, width/2)
}

// breakAt returns the byte index of the space to break line at so that
// what comes before it fits width, or -1 when no space past the line's
// indentation does. When it leaves the first part at least half the width,
// a space after a comma outside parentheses is preferred, then any space
// outside them.
func breakAt(line string, width, lead int) int {
	last, lastOuter, lastComma, col, depth := -1, -1, -1, 0, 0
	for i := 0; i < len(line); {
		if line[i] == '\x1b' {
			if end := strings.IndexByte(line[i:], 'm'); end >= 0 {
				i += end + 1
				continue
			}
		}
		if col > width {
			break
		}
		switch line[i] {
		case '(':
			depth++
		case ')':
			depth = max(depth-1, 0)
		case ' ':
			if i > lead {
				last = i
				// Parentheses are kept together where they can be, and a
				// comma inside them does not end a phrase.
				if depth == 0 && col >= width/2 {
					lastOuter = i
					if line[i-1] == ',' {
						lastComma = i
					}
				}
			}
		}
		_, size := utf8.DecodeRuneInString(line[i:])
		i += size
		col++
	}
	return cmp.Or(lastComma+1, lastOuter+1, last+1) - 1
}

// visibleLen counts the columns s takes on a terminal: its runes, less the
// ANSI colour sequences.
func visibleLen(s string) int {
	n := 0
	for i := 0; i < len(s); {
		if s[i] == '\x1b' {
			if end := strings.IndexByte(s[i:], 'm'); end >= 0 {
				i += end + 1
				continue
			}
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		n++
	}
	return n
}
