package report

import (
	"slices"
	"strings"
)

// Glyphs are the characters a progress bar is drawn with.
type Glyphs struct {
	Succeeded, Failed, InFlight, Pending string
}

// Bar glyph sets.
var (
	// UnicodeGlyphs draw bars with block characters.
	UnicodeGlyphs = Glyphs{Succeeded: "█", Failed: "✗", InFlight: "▒", Pending: "·"}
	// ASCIIGlyphs draw bars with ASCII only, for terminals without UTF-8.
	ASCIIGlyphs = Glyphs{Succeeded: "#", Failed: "x", InFlight: "~", Pending: "."}
)

// Segments are the counts a bar shows, left to right; the rest of total is
// drawn as pending.
type Segments struct {
	Succeeded, Failed, InFlight int
	Total                       int
}

// Cells splits width cells between succeeded, failed, in flight and pending
// in proportion to their counts (largest remainder), so the cells always
// add up to width, and every non-zero count gets at least one cell while
// width allows. A full bar means every target succeeded, and nothing else.
func (s Segments) Cells(width int) [4]int {
	var out [4]int
	if width <= 0 {
		return out
	}
	counts := [4]int{max(s.Succeeded, 0), max(s.Failed, 0), max(s.InFlight, 0), 0}
	sum := counts[0] + counts[1] + counts[2]
	total := max(s.Total, sum)
	counts[3] = total - sum
	if total == 0 {
		out[3] = width
		return out
	}
	type rem struct{ i, r int }
	rems := make([]rem, 0, 4)
	used := 0
	for i, c := range counts {
		out[i] = c * width / total
		used += out[i]
		rems = append(rems, rem{i: i, r: c * width % total})
	}
	// Hand the leftover cells to the largest remainders; ties go left.
	slices.SortStableFunc(rems, func(a, b rem) int { return b.r - a.r })
	for k := 0; used < width; k++ {
		out[rems[k%4].i]++
		used++
	}
	// A visible count must show: take a cell from the largest segment.
	for i, c := range counts {
		if c == 0 || out[i] > 0 {
			continue
		}
		big := 0
		for j := range out {
			if out[j] > out[big] {
				big = j
			}
		}
		if out[big] > 1 {
			out[big]--
			out[i]++
		}
	}
	// Not all succeeded: never draw a full succeeded bar.
	if counts[0] < total && out[0] == width && width > 1 {
		out[0]--
		for i := 3; i > 0; i-- {
			if counts[i] > 0 {
				out[i]++
				break
			}
		}
	}
	return out
}

// drawBar draws a bar of width cells.
func drawBar(s Segments, width int, g Glyphs, paint painter) string {
	cells := s.Cells(width)
	var b strings.Builder
	b.WriteString(paint(colorGreen, strings.Repeat(g.Succeeded, cells[0])))
	b.WriteString(paint(colorRed, strings.Repeat(g.Failed, cells[1])))
	b.WriteString(paint(colorYellow, strings.Repeat(g.InFlight, cells[2])))
	b.WriteString(paint(colorDim, strings.Repeat(g.Pending, cells[3])))
	return b.String()
}
