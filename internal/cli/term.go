package cli

import (
	"cmp"
	"io"
	"os"

	"golang.org/x/term"

	"github.com/kargo-fleet/kargo-fleet/internal/report"
)

// sizedWriter is a writer that knows the width its text is laid out for;
// a terminal is asked instead.
type sizedWriter interface {
	io.Writer
	Width() int
}

// terminalWidth returns the width of the terminal w writes to (or the
// width a sizedWriter states), or 0 when unknown.
func terminalWidth(w io.Writer) int {
	if s, ok := w.(sizedWriter); ok {
		return s.Width()
	}
	f, ok := w.(*os.File)
	if !ok {
		return 0
	}
	width, _, err := term.GetSize(int(f.Fd()))
	if err != nil {
		return 0
	}
	return width
}

// textWidth is the width text for people is laid out for: the terminal's,
// else report.DefaultWidth (a pipe, a file, a CI log).
func textWidth(w io.Writer) int {
	return cmp.Or(terminalWidth(w), report.DefaultWidth)
}

// fitWriter lays out each write, taken as whole lines, to a width (see
// report.FitLines): the verbs' sentences then wrap between words instead of
// where the terminal cuts them.
type fitWriter struct {
	w     io.Writer
	width int
}

// newFitWriter returns a fitWriter writing to w, for w's width.
func newFitWriter(w io.Writer) io.Writer {
	return fitWriter{w: w, width: textWidth(w)}
}

func (f fitWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(f.w, report.FitLines(string(p), f.width)); err != nil {
		return 0, err
	}
	return len(p), nil
}
