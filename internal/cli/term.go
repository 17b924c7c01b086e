package cli

import (
	"io"
	"os"

	"golang.org/x/term"
)

// terminalWidth returns the width of the terminal w writes to, or 0 when w
// is not a terminal or its size is unknown.
func terminalWidth(w io.Writer) int {
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
