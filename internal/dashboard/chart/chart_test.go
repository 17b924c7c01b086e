package chart

import (
	"encoding/xml"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)

func pts(step time.Duration, values ...float64) []Point {
	out := make([]Point, len(values))
	for i, v := range values {
		out[i] = Point{T: t0.Add(time.Duration(i) * step), V: v}
	}
	return out
}

var polyline = regexp.MustCompile(`<polyline class="series ([^"]*)" data-series="([^"]*)" points="([^"]*)"/>`)

func TestSVG(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		chart      Chart
		assertions func(t *testing.T, svg string)
	}{
		{
			name: "the wave and its baseline: one line each, from the plot's left edge to its right one",
			chart: Chart{Title: "error-ratio", Start: t0, End: t0.Add(4 * time.Minute), Series: []Series{
				{Name: "wave", Class: "wave", Points: pts(time.Minute, 0.01, 0.02, 0.03, 0.02, 0.01)},
				{Name: "baseline", Class: "baseline", Points: pts(time.Minute, 0.01, 0.01, 0.01, 0.01, 0.01)},
			}},
			assertions: func(t *testing.T, svg string) {
				lines := polyline.FindAllStringSubmatch(svg, -1)
				require.Len(t, lines, 2)
				require.Equal(t, []string{"wave", "wave"}, lines[0][1:3])
				require.Equal(t, []string{"baseline", "baseline"}, lines[1][1:3])
				wave := strings.Fields(lines[0][3])
				require.Len(t, wave, 5)
				require.True(t, strings.HasPrefix(wave[0], "64.0,"), "starts at the left margin: %s", wave[0])
				require.True(t, strings.HasPrefix(wave[4], "948.0,"), "ends at the right margin: %s", wave[4])
				// The highest value is the highest point (the smallest y).
				require.Less(t, y(t, wave[2]), y(t, wave[1]))
				require.Less(t, y(t, wave[1]), y(t, wave[0]))
				require.Contains(t, svg, `>0</text>`, "ratios are drawn from zero")
				require.Contains(t, svg, "09:00:00")
				require.Contains(t, svg, "09:04:00 UTC")
				require.Contains(t, svg, "<title>error-ratio</title>")
			},
		},
		{
			name: "NaN and a gap break a line into runs",
			chart: Chart{Start: t0, End: t0.Add(5 * time.Minute), Series: []Series{
				{Name: "wave", Class: "wave", Points: pts(time.Minute, 1, 2, math.NaN(), 3, math.Inf(1), 4)},
			}},
			assertions: func(t *testing.T, svg string) {
				lines := polyline.FindAllStringSubmatch(svg, -1)
				require.Len(t, lines, 3)
				require.Len(t, strings.Fields(lines[0][3]), 2)
				require.Len(t, strings.Fields(lines[1][3]), 1)
				require.NotContains(t, svg, "NaN")
				require.NotContains(t, svg, "Inf")
			},
		},
		{
			name:  "no points: says so",
			chart: Chart{Start: t0, End: t0.Add(time.Minute), Series: []Series{{Name: "wave", Class: "wave"}}},
			assertions: func(t *testing.T, svg string) {
				require.Contains(t, svg, ">no data</text>")
				require.NotContains(t, svg, "<polyline")
			},
		},
		{
			name: "markers inside the window are drawn with their tooltip, others left out",
			chart: Chart{Start: t0, End: t0.Add(2 * time.Minute), Series: []Series{
				{Name: "wave", Class: "wave", Points: pts(time.Minute, 1, 1, 1)}},
				Markers: []Marker{{T: t0.Add(time.Minute), V: 1, Class: "Failed", Label: "Failed: result = 1"},
					{T: t0.Add(time.Hour), V: 1, Class: "Successful", Label: "later"},
					{T: t0.Add(2 * time.Minute), V: math.NaN(), Class: "Inconclusive", Label: "no data"}}},
			assertions: func(t *testing.T, svg string) {
				require.Contains(t, svg, `<circle class="marker Failed" cx="506.0"`)
				require.Contains(t, svg, `<title>Failed: result = 1</title>`)
				require.NotContains(t, svg, "later")
				require.Contains(t, svg, `<circle class="marker Inconclusive" cx="948.0" cy="252.0"`,
					"a marker without a value sits on the time axis")
			},
		},
		{
			name: "text is escaped",
			chart: Chart{Title: `<script>alert(1)</script>`, Start: t0, End: t0.Add(time.Minute), Series: []Series{
				{Name: `a"<b>`, Class: `x" onload="y`, Points: pts(time.Minute, 1, 2)}}},
			assertions: func(t *testing.T, svg string) {
				require.NotContains(t, svg, "<script>")
				require.NotContains(t, svg, `x" onload`)
				require.NotContains(t, svg, `a"<b>`)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			svg := SVG(tt.chart)
			require.NoError(t, xml.Unmarshal([]byte(svg), new(struct{})), "well-formed XML: %s", svg)
			tt.assertions(t, svg)
		})
	}
}

func y(t *testing.T, point string) float64 {
	t.Helper()
	_, after, ok := strings.Cut(point, ",")
	require.True(t, ok)
	v, err := strconv.ParseFloat(after, 64)
	require.NoError(t, err)
	return v
}

func TestTicks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		lo, hi float64
		want   []float64
	}{
		{name: "ratio", lo: 0, hi: 0.011, want: []float64{0, 0.002, 0.004, 0.006, 0.008, 0.01}},
		{name: "across zero", lo: -1, hi: 1, want: []float64{-1, -0.5, 0, 0.5, 1}},
		{name: "quarter steps", lo: 0, hi: 0.0132, want: []float64{0, 0.0025, 0.005, 0.0075, 0.01, 0.0125}},
		{name: "large", lo: 0, hi: 1200, want: []float64{0, 200, 400, 600, 800, 1000, 1200}},
		{name: "empty span", lo: 1, hi: 1, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := ticks(tt.lo, tt.hi)
			require.Len(t, got, len(tt.want))
			for i := range got {
				require.InDelta(t, tt.want[i], got[i], 1e-12)
			}
		})
	}
}
