// Package chart draws line charts as SVG for the dashboard's pages: a pure
// function of the series, with no script needed in the browser.
package chart

import (
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"
	"time"
)

// Default size of a chart, in SVG user units.
const (
	DefaultWidth  = 960
	DefaultHeight = 280
)

// Margins leave room for the axes' labels.
const (
	marginLeft   = 64
	marginRight  = 12
	marginTop    = 26
	marginBottom = 28
)

// Chart is what SVG draws.
type Chart struct {
	// Title names the chart for screen readers (the SVG's <title>).
	Title string
	// Start and End bound the time axis.
	Start, End time.Time
	// Series are drawn in order, each as one or more lines.
	Series []Series
	// Markers are points drawn over the lines, e.g. measurements.
	Markers []Marker
	// Width and Height default to DefaultWidth and DefaultHeight.
	Width, Height int
}

// Series is one named line.
type Series struct {
	// Name is the series' name in the legend.
	Name string
	// Class is its CSS class: the page's style sheet colours it.
	Class string
	// Points are its samples, oldest first. A NaN or infinite value, or a
	// sample outside [Start, End], breaks the line.
	Points []Point
}

// Point is one sample.
type Point struct {
	T time.Time
	V float64
}

// Marker is a point drawn as a dot with a tooltip.
type Marker struct {
	// T and V place it; a NaN V puts it on the time axis.
	T time.Time
	V float64
	// Class colours it; Label is its tooltip.
	Class, Label string
}

// frame maps time and value to SVG coordinates.
type frame struct {
	c              Chart
	lo, hi         float64
	left, right    float64
	top, bottom    float64
	start, spanSec float64
}

func (f frame) x(t time.Time) float64 {
	return f.left + (float64(t.UnixMilli())/1000-f.start)/f.spanSec*(f.right-f.left)
}

func (f frame) y(v float64) float64 {
	return f.bottom - (v-f.lo)/(f.hi-f.lo)*(f.bottom-f.top)
}

// SVG draws c: value axis on the left with a few round ticks, time axis
// below with the start and end times, one <polyline> per unbroken run of
// each series (class "series <Class>", data-series its name), markers as
// circles, and a legend. Text is escaped. A chart without points says
// "no data".
func SVG(c Chart) string {
	if c.Width <= 0 {
		c.Width = DefaultWidth
	}
	if c.Height <= 0 {
		c.Height = DefaultHeight
	}
	f := newFrame(c)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 %d %d" width="%d" height="%d" role="img">`,
		c.Width, c.Height, c.Width, c.Height)
	fmt.Fprintf(&b, `<title>%s</title>`, html.EscapeString(c.Title))
	fmt.Fprintf(&b, `<rect class="plot" x="%s" y="%s" width="%s" height="%s"/>`, num(f.left), num(f.top),
		num(f.right-f.left), num(f.bottom-f.top))
	for _, v := range ticks(f.lo, f.hi) {
		y := f.y(v)
		fmt.Fprintf(&b, `<line class="grid" x1="%s" y1="%s" x2="%s" y2="%s"/>`, num(f.left), num(y), num(f.right), num(y))
		fmt.Fprintf(&b, `<text class="tick" x="%s" y="%s" text-anchor="end">%s</text>`, num(f.left-4), num(y+4),
			html.EscapeString(label(v)))
	}
	fmt.Fprintf(&b, `<text class="tick" x="%s" y="%d" text-anchor="start">%s</text>`, num(f.left), c.Height-8,
		c.Start.UTC().Format("15:04:05"))
	fmt.Fprintf(&b, `<text class="tick" x="%s" y="%d" text-anchor="end">%s</text>`, num(f.right), c.Height-8,
		c.End.UTC().Format("15:04:05")+" UTC")
	drawn := 0
	for _, s := range c.Series {
		for _, run := range runs(f, s.Points) {
			drawn++
			fmt.Fprintf(&b, `<polyline class="series %s" data-series="%s" points="%s"/>`, html.EscapeString(s.Class),
				html.EscapeString(s.Name), run)
		}
	}
	for _, m := range c.Markers {
		if m.T.Before(c.Start) || m.T.After(c.End) {
			continue
		}
		y := f.bottom
		if finite(m.V) {
			y = f.y(m.V)
		}
		fmt.Fprintf(&b, `<circle class="marker %s" cx="%s" cy="%s" r="4"><title>%s</title></circle>`,
			html.EscapeString(m.Class), num(f.x(m.T)), num(y), html.EscapeString(m.Label))
	}
	if drawn == 0 {
		fmt.Fprintf(&b, `<text class="nodata" x="%s" y="%s" text-anchor="middle">no data</text>`,
			num((f.left+f.right)/2), num((f.top+f.bottom)/2))
	}
	legend(&b, f, c.Series)
	b.WriteString(`</svg>`)
	return b.String()
}

// newFrame fits the value axis to the finite samples in [Start, End] and
// the markers, padded by a tenth; values all on one side of zero get an
// axis from zero, so a ratio reads at its true size.
func newFrame(c Chart) frame {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range c.Series {
		for _, p := range s.Points {
			if finite(p.V) && !p.T.Before(c.Start) && !p.T.After(c.End) {
				lo, hi = min(lo, p.V), max(hi, p.V)
			}
		}
	}
	for _, m := range c.Markers {
		if finite(m.V) {
			lo, hi = min(lo, m.V), max(hi, m.V)
		}
	}
	switch {
	case math.IsInf(lo, 1):
		lo, hi = 0, 1
	case lo == 0 && hi == 0:
		hi = 1
	default:
		if lo >= 0 {
			lo = 0
		}
		if hi <= 0 {
			hi = 0
		}
		hi += (hi - lo) / 10
		if lo < 0 {
			lo -= (hi - lo) / 10
		}
	}
	span := c.End.Sub(c.Start).Seconds()
	if span <= 0 {
		span = 1
	}
	return frame{c: c, lo: lo, hi: hi, left: marginLeft, right: float64(c.Width - marginRight), top: marginTop,
		bottom: float64(c.Height - marginBottom), start: float64(c.Start.UnixMilli()) / 1000, spanSec: span}
}

// runs returns the SVG points of each unbroken run of samples.
func runs(f frame, points []Point) []string {
	var out []string
	var cur strings.Builder
	n := 0
	flush := func() {
		if n > 0 {
			out = append(out, cur.String())
		}
		cur.Reset()
		n = 0
	}
	for _, p := range points {
		if !finite(p.V) || p.T.Before(f.c.Start) || p.T.After(f.c.End) {
			flush()
			continue
		}
		if n > 0 {
			cur.WriteByte(' ')
		}
		cur.WriteString(num(f.x(p.T)) + "," + num(f.y(p.V)))
		n++
	}
	flush()
	return out
}

// legend names each series once, above the plot on the right.
func legend(b *strings.Builder, f frame, series []Series) {
	seen := map[string]bool{}
	x := f.right - 8
	for i := len(series) - 1; i >= 0; i-- {
		s := series[i]
		if seen[s.Name] {
			continue
		}
		seen[s.Name] = true
		w := float64(7*len(s.Name) + 22)
		x -= w
		fmt.Fprintf(b, `<g class="legend %s"><line class="series %s" x1="%s" y1="%s" x2="%s" y2="%s"/>`+
			`<text x="%s" y="%s">%s</text></g>`, html.EscapeString(s.Class), html.EscapeString(s.Class), num(x), num(f.top-12),
			num(x+14), num(f.top-12), num(x+18), num(f.top-8), html.EscapeString(s.Name))
	}
}

// ticks returns round values between lo and hi: 1, 2, 2.5 or 5 times a
// power of ten apart, the closest spacing that gives at most seven of them.
func ticks(lo, hi float64) []float64 {
	span := hi - lo
	if !(span > 0) || !finite(span) {
		return nil
	}
	raw := span / 6
	pow := math.Pow(10, math.Floor(math.Log10(raw)))
	step := pow
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*pow >= raw {
			step = m * pow
			break
		}
	}
	var out []float64
	for v := math.Ceil(lo/step) * step; v <= hi+step*1e-9; v += step {
		if math.Abs(v) < step*1e-9 {
			v = 0
		}
		out = append(out, v)
	}
	return out
}

// label prints a tick value briefly: 0.0012, 1.5k, 2M.
func label(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1e6:
		return strconv.FormatFloat(v/1e6, 'g', 4, 64) + "M"
	case a >= 1e4:
		return strconv.FormatFloat(v/1e3, 'g', 4, 64) + "k"
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// num prints a coordinate with one decimal.
func num(v float64) string {
	return strconv.FormatFloat(v, 'f', 1, 64)
}

func finite(v float64) bool {
	return !math.IsNaN(v) && !math.IsInf(v, 0)
}
