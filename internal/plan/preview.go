package plan

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// PlanPreview is the JSON form of a WavePlan shown by the dry-run preview and
// the CLI: counts, resolved wave settings and target IDs, without the
// targets' labels and params.
type PlanPreview struct {
	// PlanHash is the plan's PlanHash.
	PlanHash string `json:"planHash"`
	// Candidates, Selected, Excluded, NotSelected and Unassigned count targets.
	Candidates  int `json:"candidates"`
	Selected    int `json:"selected"`
	Excluded    int `json:"excluded"`
	NotSelected int `json:"notSelected"`
	Unassigned  int `json:"unassigned"`
	// FleetMaxFailures is the resolved fleet-wide allowance, when set.
	FleetMaxFailures *int `json:"fleetMaxFailures,omitempty"`
	// Waves are the waves in promotion order.
	Waves []WavePreview `json:"waves"`
	// UnassignedTargets are the IDs of the unassigned targets.
	UnassignedTargets []string `json:"unassignedTargets,omitempty"`
	// ExcludedTargets are the excluded targets with their reasons.
	ExcludedTargets []ExcludedPreview `json:"excludedTargets,omitempty"`
	// EvaluationErrors lists wave expressions that failed on a target.
	EvaluationErrors []EvaluationError `json:"evaluationErrors,omitempty"`
}

// ExcludedPreview is one excluded target of a PlanPreview.
type ExcludedPreview struct {
	// ID, Name and Source identify the target.
	ID     string `json:"id"`
	Name   string `json:"name"`
	Source string `json:"source"`
	// Reason and Message say why it is excluded.
	Reason  ExclusionReason `json:"reason"`
	Message string          `json:"message"`
}

// NewPlanPreview builds the preview of p.
func NewPlanPreview(p *WavePlan) PlanPreview {
	pv := PlanPreview{
		PlanHash:          p.Hash,
		Candidates:        p.Candidates,
		Selected:          p.Selected(),
		Excluded:          len(p.Excluded),
		NotSelected:       p.NotSelected,
		Unassigned:        len(p.Unassigned),
		FleetMaxFailures:  p.FleetMaxFailures,
		Waves:             make([]WavePreview, len(p.Waves)),
		UnassignedTargets: targetIDs(p.Unassigned),
		EvaluationErrors:  p.EvaluationErrors,
	}
	for i := range p.Waves {
		w := &p.Waves[i]
		pv.Waves[i] = WavePreview{Name: w.Name, Members: len(w.Members), Cap: w.Cap, Targets: targetIDs(w.Members)}
		for k := range waveKnobs {
			if preview := waveKnobs[k].preview; preview != nil {
				preview(w, &pv.Waves[i])
			}
		}
		if pv.Waves[i].Targets == nil {
			pv.Waves[i].Targets = []string{}
		}
	}
	for _, e := range p.Excluded {
		pv.ExcludedTargets = append(pv.ExcludedTargets, ExcludedPreview{
			ID: e.Target.ID, Name: e.Target.Name, Source: e.Target.Source, Reason: e.Reason, Message: e.Message,
		})
	}
	return pv
}

// RenderPlanJSON writes the preview of p as indented JSON.
func RenderPlanJSON(w io.Writer, p *WavePlan) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(NewPlanPreview(p)); err != nil {
		return fmt.Errorf("error encoding plan preview: %w", err)
	}
	return nil
}

// TableOptions tune RenderPlanTable.
type TableOptions struct {
	// MaxNames is how many target names a wave's row shows at most; 0
	// shows all of them.
	MaxNames int
	// Wide adds the count, deadline, unhealthy grace and soak columns.
	Wide bool
	// Width is the width, in columns, the wave table should fit: the target
	// names of a row are cut short to fit it (0: no limit).
	Width int
}

// RenderPlanTable writes p as a human table: a summary line, one row per
// wave with its first target names, then the unassigned and excluded
// targets.
func RenderPlanTable(w io.Writer, p *WavePlan, o TableOptions) error {
	pv := NewPlanPreview(p)
	ew := &errWriter{w: w}
	counts := []string{fmt.Sprintf("Plan %s: %d candidates", shortHash(pv.PlanHash), pv.Candidates),
		fmt.Sprintf("%d selected", pv.Selected), fmt.Sprintf("%d excluded", pv.Excluded),
		fmt.Sprintf("%d not selected", pv.NotSelected), fmt.Sprintf("%d unassigned", pv.Unassigned)}
	if pv.FleetMaxFailures != nil {
		counts[len(counts)-1] += fmt.Sprintf("; fleet maxFailures %d", *pv.FleetMaxFailures)
	}
	ew.printf("%s\n\n", joinWithin(counts, ", ", "\n  ", o.Width))

	rows := planTableRows(p, pv, o.Wide)
	// The names take the room the other columns leave (tabwriter pads each
	// column to its widest cell plus two spaces).
	room := 0
	if o.Width > 0 {
		room = o.Width
		for col := range rows[0] {
			widest := 0
			for _, row := range rows {
				widest = max(widest, len(row[col]))
			}
			room -= widest + 2
		}
	}
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(rows[0], "\t")+"\tTARGETS")
	for i, wave := range pv.Waves {
		fmt.Fprintln(tw, strings.Join(rows[i+1], "\t")+"\t"+fitNames(wave.Targets, o.MaxNames, room))
	}
	_ = tw.Flush()

	maxNames := o.MaxNames
	if len(pv.UnassignedTargets) > 0 {
		ew.printf("\nUnassigned (%d, not promoted): %s\n", len(pv.UnassignedTargets),
			abbreviate(pv.UnassignedTargets, maxNames))
	}
	if len(pv.ExcludedTargets) > 0 {
		ew.printf("\nExcluded (%d):\n", len(pv.ExcludedTargets))
		tw = tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "TARGET\tSOURCE\tREASON\tMESSAGE")
		for i, e := range pv.ExcludedTargets {
			if maxNames > 0 && i == maxNames {
				fmt.Fprintf(tw, "... %d more\t\t\t\n", len(pv.ExcludedTargets)-maxNames)
				break
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", displayID(e.ID, e.Name), e.Source, e.Reason, e.Message)
		}
		_ = tw.Flush()
	}
	if n := len(pv.EvaluationErrors); n > 0 {
		first := pv.EvaluationErrors[0]
		ew.printf("\n%d wave expression evaluations failed, e.g. %s on %s: %s\n", n, first.Field, first.TargetID,
			first.Message)
	}
	return ew.err
}

// planTableRows are the header and one row per wave of the plan table,
// without the targets: name, members, cap and one column per knob that
// previews show. Without wide a row fits 80 columns: it leaves out the cap
// and the knobs without a narrow column, which are mostly defaults.
func planTableRows(p *WavePlan, pv PlanPreview, wide bool) [][]string {
	header := []string{"WAVE", "MEMBERS"}
	if wide {
		header = append(header, "CAP")
	}
	for i := range waveKnobs {
		if heading := waveKnobs[i].heading(wide); heading != "" {
			header = append(header, heading)
		}
	}
	rows := [][]string{header}
	for i, wave := range pv.Waves {
		row := []string{wave.Name, strconv.Itoa(wave.Members)}
		if wide {
			row = append(row, capString(wave.Cap))
		}
		for k := range waveKnobs {
			if waveKnobs[k].heading(wide) != "" {
				row = append(row, waveKnobs[k].show(&p.Waves[i]))
			}
		}
		rows = append(rows, row)
	}
	return rows
}

// errWriter remembers the first write error so rendering code stays linear.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(b []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(b)
	e.err = err
	return n, err
}

func (e *errWriter) printf(format string, args ...any) {
	_, _ = fmt.Fprintf(e, format, args...)
}

// targetIDs lists the IDs of ts.
func targetIDs(ts []Target) []string {
	if len(ts) == 0 {
		return nil
	}
	ids := make([]string, len(ts))
	for i := range ts {
		ids[i] = ts[i].ID
	}
	return ids
}

// joinWithin joins parts with sep, starting a new line (with brk) before a
// part that would take a line past width (0: no limit).
func joinWithin(parts []string, sep, brk string, width int) string {
	var b strings.Builder
	col := 0
	for i, p := range parts {
		switch {
		case i == 0:
		case width > 0 && col+len(sep)+len(p) > width:
			b.WriteString(strings.TrimRight(sep, " ") + brk)
			col = len(brk) - 1
		default:
			b.WriteString(sep)
			col += len(sep)
		}
		b.WriteString(p)
		col += len(p)
	}
	return b.String()
}

// fitNames abbreviates names to at most limit of them (0: all) and, when
// room is positive, to as few as fit in room characters; when not even one
// fits with its "... N more", to "first +N", else to "N targets".
func fitNames(names []string, limit, room int) string {
	if len(names) == 0 {
		return abbreviate(names, limit)
	}
	if limit <= 0 || limit > len(names) {
		limit = len(names)
	}
	for n := limit; n > 0; n-- {
		if s := abbreviate(names, n); room <= 0 || len(s) <= room {
			return s
		}
	}
	// Not even one name and how many more fit: a shorter form.
	if s := fmt.Sprintf("%s +%d", names[0], len(names)-1); len(s) <= room {
		return s
	}
	return fmt.Sprintf("%d targets", len(names))
}

// abbreviate joins the first max names and says how many more there are.
func abbreviate(names []string, limit int) string {
	if len(names) == 0 {
		return "-"
	}
	if limit <= 0 || len(names) <= limit {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s, ... %d more", strings.Join(names[:limit], ", "), len(names)-limit)
}

// displayID shows an ID, and the name when it differs.
func displayID(id, name string) string {
	if id == "" {
		return fmt.Sprintf("(no ID, name %q)", name)
	}
	if name == "" || name == id {
		return id
	}
	return fmt.Sprintf("%s (%s)", id, name)
}

// shortHash abbreviates a PlanHash for humans.
func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// formatDuration renders durations the way they are written in specs
// ("15m", "1h30m", "0s").
func formatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
