package report

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetrollout"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// HistoryInput is what `kargo-fleet history` reads.
type HistoryInput struct {
	FleetStage *fleetv1alpha1.FleetStage
	// Rollouts are the FleetStage's FleetRollouts that still exist.
	Rollouts []fleetv1alpha1.FleetRollout
	// Freight are the Freight of those rollouts, for the approvals Kargo
	// records on them.
	Freight []kargo.Freight
	Aliases map[string]string
	// BreakGlass are the FleetStage's break-glass Promotions (labelled
	// fleetv1alpha1.BreakGlassLabel with its name).
	BreakGlass []kargo.Promotion
}

// History is every rollout of a FleetStage, oldest first: the ones that
// exist and the ones the history limit deleted, from the FleetStage's
// summaries.
type History struct {
	Namespace  string         `json:"namespace"`
	FleetStage string         `json:"fleetStage"`
	Rollouts   []HistoryEntry `json:"rollouts"`
	// BreakGlass are the break-glass Promotions into the fleet's target
	// Stages, oldest first: intended, not drift.
	BreakGlass []BreakGlassEntry `json:"breakGlass,omitempty"`
}

// BreakGlassEntry is one break-glass Promotion.
type BreakGlassEntry struct {
	Promotion string      `json:"promotion"`
	Stage     string      `json:"stage"`
	Freight   FreightName `json:"freight"`
	// Actor is who created it (Kargo's create-actor annotation).
	Actor     string               `json:"actor,omitempty"`
	Reason    string               `json:"reason"`
	CreatedAt *time.Time           `json:"createdAt,omitempty"`
	Phase     kargo.PromotionPhase `json:"phase,omitempty"`
}

// HistoryEntry is one rollout.
type HistoryEntry struct {
	Name      string                         `json:"name"`
	Direction fleetv1alpha1.RolloutDirection `json:"direction"`
	Freight   FreightName                    `json:"freight"`
	// Actor is who started it (spec.actor).
	Actor string `json:"actor,omitempty"`
	// Result is the phase it is in or finished in.
	Result     fleetv1alpha1.RolloutPhase `json:"result,omitempty"`
	StartedAt  *time.Time                 `json:"startedAt,omitempty"`
	FinishedAt *time.Time                 `json:"finishedAt,omitempty"`
	// Duration is FinishedAt - StartedAt, empty while it runs.
	Duration string `json:"duration,omitempty"`
	// Deleted is set for rollouts known only from the FleetStage's summary.
	Deleted bool `json:"deleted,omitempty"`
	// Waves are the per-wave outcomes, with Kargo's approval time.
	Waves []HistoryWave `json:"waves,omitempty"`
	// Breach is the threshold breach, when one happened.
	Breach string `json:"breach,omitempty"`
	// Intent is the last pause, resume or abort and who asked for it.
	Intent      fleetv1alpha1.RolloutIntent `json:"intent,omitempty"`
	IntentActor string                      `json:"intentActor,omitempty"`
}

// HistoryWave is one wave's outcome.
type HistoryWave struct {
	Name      string                  `json:"name"`
	Phase     fleetv1alpha1.WavePhase `json:"phase,omitempty"`
	Succeeded int32                   `json:"succeeded"`
	Failed    int32                   `json:"failed"`
	Total     int32                   `json:"total"`
	// ApprovedAt is when Kargo recorded the Freight approved for the wave
	// Stage; Kargo records no approver.
	ApprovedAt *time.Time `json:"approvedAt,omitempty"`
}

// BuildHistory merges the rollouts and the FleetStage's summaries.
func BuildHistory(in HistoryInput) History {
	fs := in.FleetStage
	h := History{Namespace: fs.Namespace, FleetStage: fs.Name, Rollouts: []HistoryEntry{}}
	seen := map[string]bool{}
	for _, rec := range fs.Status.History {
		seen[rec.Name] = true
		e := HistoryEntry{Name: rec.Name, Direction: rec.Direction, Freight: freightName(rec.Freight, in.Aliases),
			Actor: rec.Actor, Result: rec.Phase, Deleted: true}
		setTimes(&e, rec.StartedAt, rec.FinishedAt)
		h.Rollouts = append(h.Rollouts, e)
	}
	approvals := map[string]map[string]*time.Time{}
	for i := range in.Freight {
		f := &in.Freight[i]
		approvals[f.Name] = map[string]*time.Time{}
		for stage, a := range f.Status.ApprovedFor {
			if a.ApprovedAt != nil {
				t := a.ApprovedAt.UTC()
				approvals[f.Name][stage] = &t
			} else {
				approvals[f.Name][stage] = &time.Time{}
			}
		}
	}
	waveStage := map[string]string{}
	for _, w := range fs.Status.Waves {
		waveStage[w.Name] = w.Stage
	}
	rollouts := slices.Clone(in.Rollouts)
	for i := range rollouts {
		ro := &rollouts[i]
		if seen[ro.Name] {
			h.Rollouts = slices.DeleteFunc(h.Rollouts, func(e HistoryEntry) bool { return e.Name == ro.Name })
		}
		e := HistoryEntry{Name: ro.Name, Direction: ro.Spec.Direction, Freight: freightName(ro.Spec.Freight.Name, in.Aliases),
			Actor: fleetrollout.ActorOf(ro), Result: ro.Status.Phase, Intent: ro.Spec.Intent,
			IntentActor: ro.Annotations[fleetv1alpha1.IntentActorAnnotation]}
		setTimes(&e, ro.Status.StartedAt, ro.Status.FinishedAt)
		if c := meta.FindStatusCondition(ro.Status.Conditions, fleetv1alpha1.ThresholdBreachedCondition); c != nil &&
			c.Status == "True" {
			e.Breach = c.Message
		}
		for _, w := range ro.Status.Waves {
			hw := HistoryWave{Name: w.Name, Phase: w.Phase, Succeeded: w.Succeeded, Failed: w.Failed, Total: w.Total}
			if at, ok := approvals[ro.Spec.Freight.Name][waveStage[w.Name]]; ok && waveStage[w.Name] != "" {
				hw.ApprovedAt = at
			}
			e.Waves = append(e.Waves, hw)
		}
		h.Rollouts = append(h.Rollouts, e)
	}
	slices.SortStableFunc(h.Rollouts, func(a, b HistoryEntry) int {
		return cmp.Or(compareTimes(a.StartedAt, b.StartedAt), cmp.Compare(a.Name, b.Name))
	})
	for i := range in.BreakGlass {
		p := &in.BreakGlass[i]
		created := p.CreationTimestamp
		h.BreakGlass = append(h.BreakGlass, BreakGlassEntry{Promotion: p.Name, Stage: p.Spec.Stage,
			Freight: freightName(p.Spec.Freight, in.Aliases), Actor: p.Annotations[kargo.CreateActorAnnotation],
			Reason: p.Annotations[fleetv1alpha1.BreakGlassReasonAnnotation], CreatedAt: toTime(&created), Phase: p.Status.Phase})
	}
	slices.SortStableFunc(h.BreakGlass, func(a, b BreakGlassEntry) int {
		return cmp.Or(compareTimes(a.CreatedAt, b.CreatedAt), cmp.Compare(a.Promotion, b.Promotion))
	})
	return h
}

func setTimes(e *HistoryEntry, started, finished *metav1.Time) {
	e.StartedAt, e.FinishedAt = toTime(started), toTime(finished)
	if e.StartedAt != nil && e.FinishedAt != nil {
		e.Duration = formatDuration(e.FinishedAt.Sub(*e.StartedAt))
	}
}

func toTime(t *metav1.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// compareTimes orders unknown times last.
func compareTimes(a, b *time.Time) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return 1
	case b == nil:
		return -1
	}
	return a.Compare(*b)
}

// RenderHistoryJSON writes a fleet's History or a TargetHistory as JSON.
func RenderHistoryJSON(w io.Writer, h any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(h)
}

// RenderHistoryText writes the history for people, one block per rollout.
func RenderHistoryText(w io.Writer, h History) error {
	var b strings.Builder
	fmt.Fprintf(&b, "FleetStage %s/%s: %d rollout(s)\n", h.Namespace, h.FleetStage, len(h.Rollouts))
	for _, e := range h.Rollouts {
		result := string(e.Result)
		if e.Deleted {
			result += " (deleted; summary kept on the FleetStage)"
		}
		fmt.Fprintf(&b, "\n%s  %s  Freight %s  %s\n", e.Name, e.Direction, DisplayFreight(e.Freight), result)
		started := "not started"
		if e.StartedAt != nil {
			started = "started " + e.StartedAt.Format(time.RFC3339)
		}
		if e.Actor != "" {
			started += " by " + e.Actor
		}
		if e.Duration != "" {
			started += ", took " + e.Duration
		}
		fmt.Fprintf(&b, "  %s\n", started)
		for _, w := range e.Waves {
			fmt.Fprintf(&b, "  wave %s: %s, %d/%d succeeded, %d failed", w.Name, cmp.Or(string(w.Phase), "Pending"),
				w.Succeeded, w.Total, w.Failed)
			if w.ApprovedAt != nil {
				if w.ApprovedAt.IsZero() {
					b.WriteString(", approved")
				} else {
					b.WriteString(", approved " + w.ApprovedAt.Format(time.RFC3339))
				}
			}
			b.WriteString("\n")
		}
		if e.Breach != "" {
			fmt.Fprintf(&b, "  breach: %s\n", e.Breach)
		}
		if e.IntentActor != "" {
			fmt.Fprintf(&b, "  intent %s set by %s\n", e.Intent, e.IntentActor)
		}
	}
	if len(h.BreakGlass) > 0 {
		fmt.Fprintf(&b, "\n%d break-glass Promotion(s), intended (not drift):\n", len(h.BreakGlass))
	}
	for _, e := range h.BreakGlass {
		created := "unknown time"
		if e.CreatedAt != nil {
			created = e.CreatedAt.Format(time.RFC3339)
		}
		fmt.Fprintf(&b, "  %s  %s  Freight %s  %s\n    by %s: %s\n", created, e.Stage, DisplayFreight(e.Freight),
			cmp.Or(string(e.Phase), "Pending"), cmp.Or(e.Actor, "unknown"), e.Reason)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// TargetHistory is one target Stage's Freight history, newest first, as
// Kargo records it (its ten newest entries).
type TargetHistory struct {
	Target  string          `json:"target"`
	Stage   string          `json:"stage"`
	Freight [][]FreightName `json:"freight"`
}

// BuildTargetHistory reads a target Stage's Freight history.
func BuildTargetHistory(st *kargo.Stage, aliases map[string]string) TargetHistory {
	th := TargetHistory{Target: cmp.Or(st.Annotations[fleetv1alpha1.TargetNameAnnotation], st.Labels[fleetv1alpha1.TargetLabel]),
		Stage: st.Name, Freight: [][]FreightName{}}
	for _, c := range st.Status.FreightHistory {
		var names []FreightName
		for _, ref := range c.Items {
			names = append(names, freightName(ref.Name, aliases))
		}
		slices.SortFunc(names, func(a, b FreightName) int { return cmp.Compare(a.Name, b.Name) })
		th.Freight = append(th.Freight, names)
	}
	return th
}

// RenderTargetHistoryText writes a target's Freight history for people.
func RenderTargetHistoryText(w io.Writer, th TargetHistory) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Target %s (Stage %s), newest first:\n", th.Target, th.Stage)
	for i, names := range th.Freight {
		parts := make([]string, len(names))
		for j, n := range names {
			parts[j] = DisplayFreight(n)
		}
		label := "  "
		if i == 0 {
			label = "* "
		}
		fmt.Fprintf(&b, "%s%s\n", label, strings.Join(parts, " + "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}
