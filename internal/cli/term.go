package cli

import (
	"io"
	"os"

	"golang.org/x/term"
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
