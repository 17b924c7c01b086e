package steps

import (
	"net/url"
	"strings"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/dashboard/link"
)

// Counts counts targets by state.
type Counts struct {
	// Total is the number of targets.
	Total int32 `json:"total"`
	// Succeeded counts targets that succeeded.
	Succeeded int32 `json:"succeeded"`
	// Failed counts targets judged failed.
	Failed int32 `json:"failed"`
	// InFlight counts targets with a running Promotion.
	InFlight int32 `json:"inFlight"`
	// Pending counts targets not started yet.
	Pending int32 `json:"pending"`
}

// WaveSummary is one wave of a rollout, as step outputs show it.
type WaveSummary struct {
	// Name is the wave's name.
	Name string `json:"name"`
	// Phase is where the wave stands.
	Phase string `json:"phase"`
	Counts
}

// waveCounts returns a wave's counts.
func waveCounts(w *fleetv1alpha1.WaveProgress) Counts {
	return Counts{Total: w.Total, Succeeded: w.Succeeded, Failed: w.Failed, InFlight: w.InFlight, Pending: w.Pending}
}

// add sums counts.
func (c Counts) add(o Counts) Counts {
	return Counts{
		Total: c.Total + o.Total, Succeeded: c.Succeeded + o.Succeeded, Failed: c.Failed + o.Failed,
		InFlight: c.InFlight + o.InFlight, Pending: c.Pending + o.Pending,
	}
}

// rolloutSummary returns the per-wave plan of a rollout and its totals.
func rolloutSummary(ro *fleetv1alpha1.FleetRollout) ([]WaveSummary, Counts) {
	plan := make([]WaveSummary, 0, len(ro.Status.Waves))
	var total Counts
	for i := range ro.Status.Waves {
		w := &ro.Status.Waves[i]
		c := waveCounts(w)
		phase := string(w.Phase)
		if phase == "" {
			phase = string(fleetv1alpha1.WavePending)
		}
		plan = append(plan, WaveSummary{Name: w.Name, Phase: phase, Counts: c})
		total = total.add(c)
	}
	return plan, total
}

// rolloutTargets returns the number of targets in a rollout's snapshot.
func rolloutTargets(ro *fleetv1alpha1.FleetRollout, total Counts) int32 {
	if ro.Status.Snapshot != nil {
		return ro.Status.Snapshot.Targets
	}
	return total.Total
}

// linkVars are the values substituted into configured link URLs.
type linkVars struct {
	in      *Input
	rollout string
	// dashboard is the fleet dashboard's base URL; "" for none.
	dashboard string
}

// links returns the links a step shows: the FleetStage's page of the fleet
// dashboard (when one is configured), Kargo UI links to the calling Stage
// and the Freight (when Kargo told its UI's URL), then the configured ones
// with their placeholders replaced.
func (v linkVars) links(configured []Link) []Link {
	c := v.in.Context
	out := make([]Link, 0, 3+len(configured))
	if v.in.FleetStage != nil {
		if u := link.FleetStageURL(v.dashboard, c.Project, v.in.FleetStage.Name); u != "" {
			out = append(out, Link{URL: u, Label: "Fleet dashboard: " + v.in.FleetStage.Name})
		}
	}
	if base, ok := link.Base(c.UIBaseURL); ok {
		project := base + "/project/" + url.PathEscape(c.Project)
		out = append(out,
			Link{URL: project + "/stage/" + url.PathEscape(c.Stage), Label: "Stage " + c.Stage},
			Link{URL: project + "/freight/" + url.PathEscape(c.Freight), Label: "Freight " + shortName(c.Freight)},
		)
	}
	if len(configured) == 0 {
		return out
	}
	fleetStage := ""
	if v.in.FleetStage != nil {
		fleetStage = v.in.FleetStage.Name
	}
	r := strings.NewReplacer(
		"{project}", url.PathEscape(c.Project),
		"{fleetStage}", url.PathEscape(fleetStage),
		"{stage}", url.PathEscape(c.Stage),
		"{wave}", url.PathEscape(v.in.Wave()),
		"{freight}", url.PathEscape(c.Freight),
		"{promotion}", url.PathEscape(c.Promotion),
		"{rollout}", url.PathEscape(v.rollout),
	)
	for _, l := range configured {
		out = append(out, Link{URL: r.Replace(l.URL), Label: l.Label})
	}
	return out
}

// shortName shortens a Freight name for labels, as Kargo's UI does.
func shortName(name string) string {
	if len(name) > 7 {
		return name[:7]
	}
	return name
}
