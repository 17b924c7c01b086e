package plan

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
)

// UnassignedPlacement is the placement of a selected target no wave took. It
// cannot collide with a wave name, which is a DNS label.
const UnassignedPlacement = "(unassigned)"

// TargetMove is a target in both plans, placed differently.
type TargetMove struct {
	// ID and Name identify the target.
	ID   string `json:"id"`
	Name string `json:"name"`
	// From and To are wave names or UnassignedPlacement.
	From string `json:"from"`
	To   string `json:"to"`
}

// TargetPlacement is a target present in only one of two plans.
type TargetPlacement struct {
	// ID and Name identify the target.
	ID   string `json:"id"`
	Name string `json:"name"`
	// Placement is the wave name or UnassignedPlacement.
	Placement string `json:"placement"`
}

// PlanDiff is the difference between two plans of one FleetStage. Targets
// are compared by ID; a target counts as in a plan when it is a wave member
// or unassigned (excluded and unselected targets are not in the fleet).
type PlanDiff struct {
	// Moved are targets whose placement changed, sorted by ID.
	Moved []TargetMove `json:"moved"`
	// Joined are targets only the new plan has, sorted by ID.
	Joined []TargetPlacement `json:"joined"`
	// Left are targets only the old plan has, sorted by ID.
	Left []TargetPlacement `json:"left"`
	// Waves are the waves added, removed or whose resolved settings
	// changed, in the new plan's order, removed waves last.
	Waves []WaveChange `json:"waves"`
}

// Wave changes.
const (
	// WaveAdded is a wave only the new plan has.
	WaveAdded = "added"
	// WaveRemoved is a wave only the old plan has.
	WaveRemoved = "removed"
	// WaveChanged is a wave both plans have, with other resolved settings.
	WaveChanged = "changed"
)

// WaveChange is a wave whose presence or resolved settings differ between
// two plans.
type WaveChange struct {
	// Name is the wave's name.
	Name string `json:"name"`
	// Change is WaveAdded, WaveRemoved or WaveChanged.
	Change string `json:"change"`
	// MembersBefore and MembersAfter count the wave's members in each plan
	// (0 where the wave is absent).
	MembersBefore int `json:"membersBefore"`
	MembersAfter  int `json:"membersAfter"`
	// Settings are the resolved settings that changed, in a fixed order
	// (empty for an added or removed wave).
	Settings []SettingChange `json:"settings,omitempty"`
}

// SettingChange is one resolved wave setting that changed.
type SettingChange struct {
	// Field is the setting's spec name, e.g. maxFailures.
	Field string `json:"field"`
	// From and To are its resolved values, as the plan preview shows them.
	From string `json:"from"`
	To   string `json:"to"`
}

// Empty reports whether the plans place every target alike and resolve
// every wave alike.
func (d *PlanDiff) Empty() bool {
	return len(d.Moved) == 0 && len(d.Joined) == 0 && len(d.Left) == 0 && len(d.Waves) == 0
}

// placements maps every target ID of p to its placement.
func placements(p *WavePlan) map[string]TargetPlacement {
	out := make(map[string]TargetPlacement, p.Selected())
	for i := range p.Waves {
		for _, t := range p.Waves[i].Members {
			out[t.ID] = TargetPlacement{ID: t.ID, Name: t.Name, Placement: p.Waves[i].Name}
		}
	}
	for _, t := range p.Unassigned {
		out[t.ID] = TargetPlacement{ID: t.ID, Name: t.Name, Placement: UnassignedPlacement}
	}
	return out
}

// Diff compares an old and a new plan.
func Diff(oldPlan, newPlan *WavePlan) PlanDiff {
	before, after := placements(oldPlan), placements(newPlan)
	d := PlanDiff{Moved: []TargetMove{}, Joined: []TargetPlacement{}, Left: []TargetPlacement{}}
	for id, a := range after {
		b, ok := before[id]
		switch {
		case !ok:
			d.Joined = append(d.Joined, a)
		case b.Placement != a.Placement:
			d.Moved = append(d.Moved, TargetMove{ID: id, Name: a.Name, From: b.Placement, To: a.Placement})
		}
	}
	for id, b := range before {
		if _, ok := after[id]; !ok {
			d.Left = append(d.Left, b)
		}
	}
	slices.SortFunc(d.Moved, func(x, y TargetMove) int { return cmp.Compare(x.ID, y.ID) })
	slices.SortFunc(d.Joined, func(x, y TargetPlacement) int { return cmp.Compare(x.ID, y.ID) })
	slices.SortFunc(d.Left, func(x, y TargetPlacement) int { return cmp.Compare(x.ID, y.ID) })
	d.Waves = diffWaves(oldPlan, newPlan)
	return d
}

// diffWaves compares the waves of two plans by name.
func diffWaves(oldPlan, newPlan *WavePlan) []WaveChange {
	byName := make(map[string]*PlannedWave, len(oldPlan.Waves))
	for i := range oldPlan.Waves {
		byName[oldPlan.Waves[i].Name] = &oldPlan.Waves[i]
	}
	changes := []WaveChange{}
	for i := range newPlan.Waves {
		a := &newPlan.Waves[i]
		b, ok := byName[a.Name]
		if !ok {
			changes = append(changes, WaveChange{Name: a.Name, Change: WaveAdded, MembersAfter: len(a.Members)})
			continue
		}
		delete(byName, a.Name)
		// A wave's size follows its targets, which the target rows show:
		// a wave is listed when what it resolves to changed.
		if settings := settingChanges(b, a); len(settings) > 0 {
			changes = append(changes, WaveChange{Name: a.Name, Change: WaveChanged, MembersBefore: len(b.Members),
				MembersAfter: len(a.Members), Settings: settings})
		}
	}
	for i := range oldPlan.Waves {
		b := &oldPlan.Waves[i]
		if _, ok := byName[b.Name]; ok {
			changes = append(changes, WaveChange{Name: b.Name, Change: WaveRemoved, MembersBefore: len(b.Members)})
		}
	}
	return changes
}

// settingChanges lists the resolved settings of a wave that differ, as the
// plan preview shows them: its count, then every knob previews show.
func settingChanges(b, a *PlannedWave) []SettingChange {
	var out []SettingChange
	if from, to := capString(b.Cap), capString(a.Cap); from != to {
		out = append(out, SettingChange{Field: "count", From: from, To: to})
	}
	for i := range waveKnobs {
		k := &waveKnobs[i]
		if k.show == nil {
			continue
		}
		if from, to := k.show(b), k.show(a); from != to {
			out = append(out, SettingChange{Field: k.name, From: from, To: to})
		}
	}
	return out
}

// capString shows a wave's resolved count, "-" when it has none.
func capString(c *int) string {
	if c == nil {
		return "-"
	}
	return strconv.Itoa(*c)
}

// RenderDiffTable writes d as a human table: the waves that changed, then
// one row per target that moves, joins or leaves.
func RenderDiffTable(w io.Writer, d *PlanDiff) error {
	ew := &errWriter{w: w}
	if d.Empty() {
		ew.printf("No change: every target keeps its wave.\n")
		return ew.err
	}
	if len(d.Waves) > 0 {
		tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "WAVE\tCHANGE\tMEMBERS\tSETTINGS")
		for _, c := range d.Waves {
			members := fmt.Sprintf("%d -> %d", c.MembersBefore, c.MembersAfter)
			switch c.Change {
			case WaveAdded:
				members = strconv.Itoa(c.MembersAfter)
			case WaveRemoved:
				members = strconv.Itoa(c.MembersBefore)
			}
			settings := make([]string, 0, len(c.Settings))
			for _, s := range c.Settings {
				settings = append(settings, fmt.Sprintf("%s %s -> %s", s.Field, s.From, s.To))
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.Name, c.Change, members, cmp.Or(strings.Join(settings, ", "), "-"))
		}
		_ = tw.Flush()
		ew.printf("\n")
	}
	if len(d.Moved)+len(d.Joined)+len(d.Left) == 0 {
		ew.printf("Every target keeps its wave.\n")
		return ew.err
	}
	ew.printf("%d moved, %d joined, %d left\n\n", len(d.Moved), len(d.Joined), len(d.Left))
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CHANGE\tTARGET\tFROM\tTO")
	for _, m := range d.Moved {
		fmt.Fprintf(tw, "moved\t%s\t%s\t%s\n", displayID(m.ID, m.Name), m.From, m.To)
	}
	for _, j := range d.Joined {
		fmt.Fprintf(tw, "joined\t%s\t-\t%s\n", displayID(j.ID, j.Name), j.Placement)
	}
	for _, l := range d.Left {
		fmt.Fprintf(tw, "left\t%s\t%s\t-\n", displayID(l.ID, l.Name), l.Placement)
	}
	_ = tw.Flush()
	return ew.err
}

// RenderDiffJSON writes d as indented JSON.
func RenderDiffJSON(w io.Writer, d *PlanDiff) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(d); err != nil {
		return fmt.Errorf("error encoding plan diff: %w", err)
	}
	return nil
}
