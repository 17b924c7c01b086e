package report

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
)

// Defaults of TextOptions.
const (
	// DefaultBarWidth is the width of a wave's progress bar in cells.
	DefaultBarWidth = 30
	// DefaultMaxExamples is how many example targets are shown per reason.
	DefaultMaxExamples = 3
	// DefaultWidth is the width, in columns, failure messages are wrapped
	// to when the terminal's width is unknown (output to a file or pipe).
	DefaultWidth = 100
	// maxExampleLines bounds the lines of one example's message.
	maxExampleLines = 3
)

// TextOptions tune RenderText.
type TextOptions struct {
	// Now is the time elapsed times are measured to; required.
	Now time.Time
	// BarWidth is the width of progress bars (default DefaultBarWidth).
	BarWidth int
	// ASCII draws bars with ASCIIGlyphs instead of UnicodeGlyphs.
	ASCII bool
	// Color paints bars and phases with ANSI colours.
	Color bool
	// MaxExamples is how many example targets are shown per failure reason
	// (default DefaultMaxExamples).
	MaxExamples int
	// NoLegend leaves out the line explaining the bar glyphs.
	NoLegend bool
	// Width is the terminal's width in columns (default DefaultWidth):
	// failure messages are wrapped to it over up to three lines.
	Width int
}

func (o TextOptions) withDefaults() TextOptions {
	if o.BarWidth <= 0 {
		o.BarWidth = DefaultBarWidth
	}
	if o.MaxExamples <= 0 {
		o.MaxExamples = DefaultMaxExamples
	}
	if o.Width <= 0 {
		o.Width = DefaultWidth
	}
	return o
}

// ANSI colours.
const (
	colorGreen  = "32"
	colorRed    = "31"
	colorYellow = "33"
	colorCyan   = "36"
	colorDim    = "2"
	colorBold   = "1"
)

// painter wraps text in a colour, or not.
type painter func(color, text string) string

func newPainter(enabled bool) painter {
	if !enabled {
		return func(_, s string) string { return s }
	}
	return func(color, s string) string {
		if s == "" {
			return s
		}
		return "\x1b[" + color + "m" + s + "\x1b[0m"
	}
}

// RenderJSON writes r as indented JSON.
func RenderJSON(w io.Writer, r Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("error encoding the status report: %w", err)
	}
	return nil
}

// RenderText writes r for people: the fleet summary, then each rollout with
// a progress bar per wave and its failures. Every line fits o.Width: bars
// shrink (down to minBarWidth) and long lines wrap (see FitLines).
func RenderText(w io.Writer, r Report, o TextOptions) error {
	o = o.withDefaults()
	var buf strings.Builder
	t := &textWriter{w: &buf, o: o, paint: newPainter(o.Color), glyphs: UnicodeGlyphs}
	if o.ASCII {
		t.glyphs = ASCIIGlyphs
	}
	t.fleet(&r.FleetStage)
	for i := range r.Rollouts {
		t.printf("\n")
		t.rollout(&r.Rollouts[i])
	}
	if len(r.Rollouts) == 0 {
		t.printf("\nNo FleetRollout yet: promote Freight into the first wave Stage to start one.\n")
	}
	if rec := r.Recovery; rec != nil {
		// The command has a line of its own, so a narrow terminal never
		// wraps it in the middle.
		t.printf("\n%s: %s\n  To return every target to the last good Freight %s:\n    %s\n",
			t.paint(colorYellow, "Next"), rec.Reason, DisplayFreight(rec.Freight), t.paint(colorBold, rec.Command))
	}
	if !o.NoLegend {
		g := t.glyphs
		t.printf("\n%s succeeded  %s failed  %s in flight  %s pending\n", t.paint(colorGreen, g.Succeeded),
			t.paint(colorRed, g.Failed), t.paint(colorYellow, g.InFlight), t.paint(colorDim, g.Pending))
	}
	if t.err != nil {
		return t.err
	}
	_, err := io.WriteString(w, FitLines(buf.String(), o.Width))
	return err
}

// minBarWidth is the narrowest a bar shrinks to on a narrow terminal.
const minBarWidth = 10

// barWidth is the bar width that leaves room for the rest columns of a
// line: the configured width, less what the terminal lacks, at least
// minBarWidth.
func (t *textWriter) barWidth(rest int) int {
	return max(min(t.o.BarWidth, t.o.Width-rest), min(minBarWidth, t.o.BarWidth))
}

// textWriter renders one report, remembering the first write error.
type textWriter struct {
	w      io.Writer
	o      TextOptions
	paint  painter
	glyphs Glyphs
	err    error
}

func (t *textWriter) printf(format string, args ...any) {
	if t.err == nil {
		_, t.err = fmt.Fprintf(t.w, format, args...)
	}
}

func (t *textWriter) fleet(f *Fleet) {
	ready := "not reconciled yet"
	switch f.Ready {
	case "True":
		ready = t.paint(colorGreen, "Ready")
	case "False", "Unknown":
		ready = t.paint(colorRed, "Not ready") + " (" + f.ReadyReason + ")"
	}
	members := int32(0)
	for _, w := range f.Waves {
		members += w.Members
	}
	t.printf("%s %s/%s: %s, %d targets in %d waves", t.paint(colorBold, "FleetStage"), f.Namespace, f.Name,
		ready, f.Targets.Selected, len(f.Waves))
	if f.LastGoodFreight != nil {
		t.printf(", last good Freight %s", DisplayFreight(*f.LastGoodFreight))
	} else {
		t.printf(", no last good Freight yet")
	}
	t.printf("\n")
	if f.Ready == "False" && f.ReadyMessage != "" {
		t.printf("  %s\n", f.ReadyMessage)
	}
	tc := f.Targets
	t.printf("  Targets   %d candidates, %d selected, %d excluded, %d unassigned", tc.Candidates, tc.Selected,
		tc.Excluded, tc.Unassigned)
	if len(tc.ExcludedByReason) > 0 {
		parts := make([]string, 0, len(tc.ExcludedByReason))
		for _, rc := range tc.ExcludedByReason {
			parts = append(parts, fmt.Sprintf("%s %d", rc.Reason, rc.Count))
		}
		t.printf(" (%s)", strings.Join(parts, ", "))
	}
	t.printf("\n")
	if len(f.Waves) > 0 {
		parts := make([]string, 0, len(f.Waves))
		for _, w := range f.Waves {
			parts = append(parts, fmt.Sprintf("%s %d", w.Name, w.Members))
		}
		t.printf("  Waves     %s\n", strings.Join(parts, ", "))
	}
	if len(f.Shards) > 0 {
		parts := make([]string, 0, len(f.Shards))
		for _, s := range f.Shards {
			parts = append(parts, fmt.Sprintf("%s %d", plan.DisplayShard(s.Shard), s.Targets))
		}
		t.printf("  Shards    %s\n", strings.Join(parts, ", "))
	}
	t.versions(f.Versions)
	t.drift(f.Drift)
	t.applications(f.Applications)
}

// applications prints what the targets' Argo CD Applications show.
func (t *textWriter) applications(a *fleetv1alpha1.ApplicationDriftStatus) {
	if a == nil {
		return
	}
	color := colorRed
	if a.Foreign+a.Broken == 0 {
		color = colorYellow
	}
	t.printf("  Argo CD   %s\n", t.paint(color, fmt.Sprintf("%d Application(s) changed outside the fleet, %d broken, %d by break-glass",
		a.Foreign, a.Broken, a.Intended)))
	for _, e := range a.Examples {
		t.printf("            %s %s (%s, %s): %s\n", e.Target, e.Application, e.Class, e.Reason, e.Message)
	}
	if more := int(a.Foreign+a.Broken+a.Intended) - len(a.Examples); more > 0 {
		t.printf("            and %d more\n", more)
	}
}

func (t *textWriter) drift(d *Drift) {
	if d == nil {
		return
	}
	t.printf("  Drifted   %s\n", t.paint(colorRed, fmt.Sprintf("%d target(s) run Freight the fleet does not intend", d.Count)))
	for _, e := range d.Examples {
		t.printf("            %s runs %s instead of %s (Stage %s)\n", e.Target, DisplayFreight(e.Freight),
			DisplayFreight(e.Intended), e.Stage)
	}
	if more := int(d.Count) - len(d.Examples); more > 0 {
		t.printf("            and %d more\n", more)
	}
}

func (t *textWriter) versions(vs []Version) {
	if len(vs) == 0 {
		return
	}
	total := int32(0)
	nameWidth, countWidth := 0, 1
	for _, v := range vs {
		total += v.Targets
		nameWidth = max(nameWidth, utf8.RuneCountInString(DisplayFreight(v.Freight)))
		countWidth = max(countWidth, len(fmt.Sprint(v.Targets)))
	}
	// "  Versions  " name " [" bar "] " count "  " pct%
	barWidth := t.barWidth(12 + nameWidth + 3 + countWidth + 2 + 5)
	for i, v := range vs {
		label := "  Versions  "
		if i > 0 {
			label = strings.Repeat(" ", 12)
		}
		bar := drawBar(Segments{Succeeded: int(v.Targets), Total: int(total)}, barWidth,
			Glyphs{Succeeded: t.glyphs.Succeeded, Pending: t.glyphs.Pending}, t.paint)
		t.printf("%s%s [%s] %*d  %3d%%\n", label, padRight(DisplayFreight(v.Freight), nameWidth), bar, countWidth,
			v.Targets, percent(v.Targets, total))
	}
}

func (t *textWriter) rollout(r *Rollout) {
	t.printf("%s %s (%s): %s to %s, %s, %s", t.paint(colorBold, "FleetRollout"), r.Name, r.Role, r.Direction,
		DisplayFreight(r.Freight), t.phase(string(r.Phase)), t.elapsed(r))
	t.printf("\n")
	var facts []string
	if r.RollbackOf != "" {
		facts = append(facts, "rolls back "+r.RollbackOf)
	}
	if r.Actor != "" {
		facts = append(facts, "by "+r.Actor)
	}
	if r.Intent != fleetv1alpha1.IntentRun {
		facts = append(facts, "intent "+t.paint(colorCyan, string(r.Intent)))
	}
	if tot := r.Totals; tot.Total > 0 {
		facts = append(facts, fmt.Sprintf("%d/%d targets succeeded", tot.Succeeded, tot.Total))
		if tot.Failed > 0 {
			facts = append(facts, fmt.Sprintf("%d failed", tot.Failed))
		}
	}
	if len(facts) > 0 {
		t.printf("  %s\n", strings.Join(facts, ", "))
	}
	if r.Message != "" {
		t.printf("  %s\n", r.Message)
	}
	t.waves(r.Waves, r.Analyses)
	t.failures(r.Failures)
}

func (t *textWriter) waves(ws []fleetv1alpha1.WaveProgress, analyses []WaveAnalysis) {
	nameWidth, totalWidth := 0, 1
	for _, w := range ws {
		nameWidth = max(nameWidth, utf8.RuneCountInString(w.Name))
		totalWidth = max(totalWidth, len(fmt.Sprint(w.Total)))
	}
	phaseWidth := 0
	for _, w := range ws {
		phaseWidth = max(phaseWidth, len(cmp.Or(string(w.Phase), string(fleetv1alpha1.WavePending))))
	}
	details := make([]string, len(ws))
	detailsWidth := 0
	for i, w := range ws {
		var parts []string
		if w.Failed > 0 {
			parts = append(parts, fmt.Sprintf("%d failed", w.Failed))
		}
		if w.InFlight > 0 {
			parts = append(parts, fmt.Sprintf("%d in flight", w.InFlight))
		}
		if w.Pending > 0 && w.Pending != w.Total {
			parts = append(parts, fmt.Sprintf("%d pending", w.Pending))
		}
		if len(parts) > 0 {
			details[i] = "  " + strings.Join(parts, ", ")
		}
		detailsWidth = max(detailsWidth, len(details[i]))
	}
	// "  " name " [" bar "] " succeeded "/" total " " phase details
	barWidth := t.barWidth(2 + nameWidth + 4 + 2*totalWidth + 2 + phaseWidth + detailsWidth)
	for i, w := range ws {
		bar := drawBar(Segments{Succeeded: int(w.Succeeded), Failed: int(w.Failed), InFlight: int(w.InFlight),
			Total: int(w.Total)}, barWidth, t.glyphs, t.paint)
		phase := cmp.Or(string(w.Phase), string(fleetv1alpha1.WavePending))
		line := fmt.Sprintf("  %s [%s] %*d/%-*d %s", padRight(w.Name, nameWidth), bar, totalWidth, w.Succeeded,
			totalWidth, w.Total, t.phase(padRight(phase, phaseWidth))) + details[i]
		t.printf("%s\n", strings.TrimRight(line, " "))
		if w.Waiting != "" {
			waiting := w.Waiting
			if !strings.HasPrefix(waiting, "waiting") {
				waiting = "waiting: " + waiting
			}
			t.printf("  %s %s\n", strings.Repeat(" ", nameWidth), t.paint(colorCyan, waiting))
		}
		for j := range analyses {
			if analyses[j].Wave == w.Name {
				t.analysis(&analyses[j], "   "+strings.Repeat(" ", nameWidth))
			}
		}
	}
}

func (t *textWriter) failures(groups []fleetv1alpha1.FailureGroup) {
	if len(groups) == 0 {
		return
	}
	reasonWidth, countWidth := 0, 1
	for _, g := range groups {
		reasonWidth = max(reasonWidth, len(g.Reason))
		countWidth = max(countWidth, len(fmt.Sprint(g.Count)))
	}
	t.printf("  Failures\n")
	for _, g := range groups {
		prefix := fmt.Sprintf("    %s %*d", padRight(g.Reason, reasonWidth), countWidth, g.Count)
		if len(g.Examples) == 0 {
			t.printf("%s\n", t.paint(colorRed, prefix))
			continue
		}
		for i, ex := range g.Examples {
			if i == t.o.MaxExamples {
				t.printf("%s  ... %d more\n", strings.Repeat(" ", utf8.RuneCountInString(prefix)), len(g.Examples)-i)
				break
			}
			lead := strings.Repeat(" ", utf8.RuneCountInString(prefix))
			if i == 0 {
				lead = t.paint(colorRed, prefix)
			}
			head := fmt.Sprintf("  %s: ", ex.Name)
			indent := utf8.RuneCountInString(prefix) + utf8.RuneCountInString(head)
			for j, line := range wrapMessage(ex.Reason, t.o.Width-indent, maxExampleLines) {
				if j == 0 {
					t.printf("%s%s%s\n", lead, head, line)
					continue
				}
				t.printf("%s%s\n", strings.Repeat(" ", indent), line)
			}
		}
	}
}

// phase paints a phase name by what it means.
func (t *textWriter) phase(p string) string {
	switch strings.TrimSpace(p) {
	case string(fleetv1alpha1.RolloutSucceeded):
		return t.paint(colorGreen, p)
	case string(fleetv1alpha1.RolloutFailed), string(fleetv1alpha1.RolloutHalted), string(fleetv1alpha1.RolloutAborted):
		return t.paint(colorRed, p)
	case string(fleetv1alpha1.RolloutProgressing), string(fleetv1alpha1.RolloutRollingBack):
		return t.paint(colorYellow, p)
	case string(fleetv1alpha1.RolloutPaused), string(fleetv1alpha1.RolloutWaitingForApproval):
		return t.paint(colorCyan, p)
	}
	return t.paint(colorDim, p)
}

// elapsed says how long a rollout has run, or ran.
func (t *textWriter) elapsed(r *Rollout) string {
	start := r.CreatedAt.Time
	if r.StartedAt != nil {
		start = r.StartedAt.Time
	}
	if start.IsZero() {
		return "not started"
	}
	switch {
	case r.FinishedAt != nil:
		return "took " + formatDuration(r.FinishedAt.Sub(start))
	case r.Phase.IsFinal():
		return "started " + formatDuration(t.o.Now.Sub(start)) + " ago"
	}
	return "running for " + formatDuration(t.o.Now.Sub(start))
}

// formatDuration prints a duration rounded to the second: 45s, 3m05s, 2h10m.
func formatDuration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	d = d.Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

// DisplayFreight names a Freight by alias and short name: "v1.4.0 (1a2b3c4)".
func DisplayFreight(f FreightName) string {
	short := f.Name
	if len(short) > 12 && isHex(short) {
		short = short[:7]
	}
	if f.Alias == "" || f.Alias == f.Name {
		return short
	}
	return f.Alias + " (" + short + ")"
}

func isHex(s string) bool {
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func percent(n, total int32) int {
	if total <= 0 {
		return 0
	}
	return int((int64(n)*100 + int64(total)/2) / int64(total))
}

func padRight(s string, width int) string {
	if n := utf8.RuneCountInString(s); n < width {
		return s + strings.Repeat(" ", width-n)
	}
	return s
}
