package report

import (
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"
)

// Live shows a report that changes: on a terminal it redraws the previous
// frame in place; elsewhere (a pipe, a CI log) it appends each frame as a
// snapshot, separated by a blank line.
type Live struct {
	w     io.Writer
	tty   bool
	width int
	lines int
}

// NewLive returns a Live writing to w; tty says whether w is a terminal
// that understands ANSI cursor movement (see IsTerminal).
func NewLive(w io.Writer, tty bool) *Live {
	return &Live{w: w, tty: tty}
}

// WithWidth makes Draw cut lines to width columns on a terminal, so that no
// line wraps and the redraw stays in place (0: no limit).
func (l *Live) WithWidth(width int) *Live {
	l.width = width
	return l
}

// Draw shows frame, replacing the previous one on a terminal.
func (l *Live) Draw(frame string) error {
	if !strings.HasSuffix(frame, "\n") {
		frame += "\n"
	}
	if l.tty && l.width > 0 {
		lines := strings.Split(strings.TrimSuffix(frame, "\n"), "\n")
		for i, line := range lines {
			lines[i] = cutVisible(line, l.width)
		}
		frame = strings.Join(lines, "\n") + "\n"
	}
	var b strings.Builder
	if l.tty {
		if l.lines > 0 {
			// Up to the first line of the previous frame, then clear below.
			fmt.Fprintf(&b, "\x1b[%dA\r", l.lines)
		}
		b.WriteString("\x1b[J")
		// Clear each line's tail too, in case the terminal keeps old text.
		b.WriteString(strings.ReplaceAll(frame, "\n", "\x1b[K\n"))
		l.lines = strings.Count(frame, "\n")
	} else {
		b.WriteString(frame)
		b.WriteString("\n")
	}
	_, err := io.WriteString(l.w, b.String())
	return err
}

// Forget makes the next Draw start below what is on screen, keeping the
// last frame (call it before printing anything else).
func (l *Live) Forget() { l.lines = 0 }

// IsTerminal reports whether w is a character device (a terminal).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// cutVisible cuts s to width visible characters, keeping ANSI colour
// sequences (which take no room) and resetting colours when it cuts.
func cutVisible(s string, width int) string {
	var b strings.Builder
	visible := 0
	for i := 0; i < len(s); {
		if s[i] == '\x1b' {
			end := strings.IndexByte(s[i:], 'm')
			if end < 0 {
				break
			}
			b.WriteString(s[i : i+end+1])
			i += end + 1
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if visible == width {
			if strings.Contains(s, "\x1b[") {
				b.WriteString("\x1b[0m")
			}
			return b.String()
		}
		b.WriteRune(r)
		visible++
		i += size
	}
	return b.String()
}
