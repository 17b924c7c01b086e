package plan

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
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
}

// Empty reports whether the plans place every target alike.
func (d *PlanDiff) Empty() bool {
	return len(d.Moved) == 0 && len(d.Joined) == 0 && len(d.Left) == 0
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
	return d
}

// RenderDiffTable writes d as a human table, one row per changed target.
func RenderDiffTable(w io.Writer, d *PlanDiff) error {
	ew := &errWriter{w: w}
	if d.Empty() {
		ew.printf("No change: every target keeps its wave.\n")
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
