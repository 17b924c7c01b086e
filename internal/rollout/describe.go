package rollout

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/render"
	"github.com/kargo-fleet/kargo-fleet/internal/strutil"
)

// MaxDescription bounds a wave description: Kargo shows it in the Stage's
// drawer, and it is written into an annotation of the wave Stage.
const MaxDescription = 1024

// WaveView is what one wave's description is rendered from.
type WaveView struct {
	// Rollout is the rollout the wave Stage shows.
	Rollout *fleetv1alpha1.FleetRollout
	// Wave is the wave's name.
	Wave string
	// Dashboard is the fleet dashboard's page of the FleetStage; "" when no
	// dashboard URL is configured (no link rather than a dead one).
	Dashboard string
}

// Description is a wave's state as the Kargo UI shows it: in the wave
// Stage's kargo.akuity.io/description and in the fleet-wave step's outputs.
type Description struct {
	// Text is the description.
	Text string
	// Shape is Text without the target counts: when only the counts
	// changed, Shape is unchanged, so a writer can coalesce those writes.
	Shape string
}

// DescribeWave says, for people, where a rollout stands in one wave: the
// rollout's phase, the wave's counts and what it waits for (a soak, an
// approval with the command that gives it, a change window, a breach and
// its rollback). It is pure: the same view gives the same text.
func DescribeWave(v WaveView) Description {
	return Description{Text: describeWave(v, true), Shape: describeWave(v, false)}
}

func describeWave(v WaveView, counts bool) string {
	ro := v.Rollout
	var b strings.Builder
	phase := ro.Status.Phase
	if phase == "" {
		phase = fleetv1alpha1.RolloutPending
	}
	if ro.Spec.Direction == fleetv1alpha1.DirectionRollback {
		fmt.Fprintf(&b, "kargo-fleet rollback %s returns the targets of %s to Freight %s: %s.",
			ro.Name, ro.Spec.RollbackOf, ShortFreight(ro.Spec.Freight.Name), phase)
		// Why the fleet went back is what a reader of a green wave Stage
		// after a failed rollout asks first.
		if why := strings.TrimSpace(ro.Annotations[fleetv1alpha1.RollbackReasonAnnotation]); why != "" {
			fmt.Fprintf(&b, " Why: %s.", strings.TrimSuffix(why, "."))
		}
	} else {
		fmt.Fprintf(&b, "kargo-fleet rollout %s of Freight %s: %s.", ro.Name, ShortFreight(ro.Spec.Freight.Name), phase)
	}
	wp := waveOf(ro, v.Wave)
	switch {
	case wp == nil && ro.Spec.Direction == fleetv1alpha1.DirectionRollback:
		fmt.Fprintf(&b, " Wave %s: none of its targets moved, none goes back.", v.Wave)
	case wp == nil:
		fmt.Fprintf(&b, " Wave %s is not part of this rollout.", v.Wave)
	default:
		wavePhase := wp.Phase
		if wavePhase == "" {
			wavePhase = fleetv1alpha1.WavePending
		}
		fmt.Fprintf(&b, " Wave %s: %s", wp.Name, wavePhase)
		if counts {
			fmt.Fprintf(&b, ", %d succeeded, %d failed, %d in flight of %d", wp.Succeeded, wp.Failed, wp.InFlight, wp.Total)
		}
		b.WriteString(".")
		if w := waiting(ro, wp); w != "" {
			b.WriteString(" " + w)
		}
		if a := wp.Analysis; a != nil {
			b.WriteString(" " + describeAnalysis(a))
		}
	}
	breached := false
	if c := meta.FindStatusCondition(ro.Status.Conditions, fleetv1alpha1.ThresholdBreachedCondition); c != nil &&
		c.Status == metav1.ConditionTrue {
		breached = true
		fmt.Fprintf(&b, " Threshold breached: %s.", strings.TrimSuffix(c.Message, "."))
		if rb := meta.FindStatusCondition(ro.Status.Conditions, fleetv1alpha1.RollbackCondition); rb != nil {
			fmt.Fprintf(&b, " Rollback: %s.", strings.TrimSuffix(rb.Message, "."))
		} else {
			b.WriteString(" Rollback: none started (spec.policy.rollback.mode Manual): kargo-fleet rollback -n " + ro.Namespace + " " + ro.Spec.FleetStage + ".")
		}
	}
	if phase.IsFinal() && ro.Status.Message != "" && !breached {
		fmt.Fprintf(&b, " %s.", upperFirst(strings.TrimSuffix(ro.Status.Message, ".")))
	}
	if v.Dashboard != "" {
		b.WriteString(" Fleet dashboard: " + v.Dashboard)
	}
	return strutil.Ellipsis(b.String(), MaxDescription)
}

// waiting says what a wave waits for, if anything.
func waiting(ro *fleetv1alpha1.FleetRollout, wp *fleetv1alpha1.WaveProgress) string {
	if ro.Status.Phase.IsFinal() || wp.Phase == fleetv1alpha1.WaveSucceeded || wp.Phase == fleetv1alpha1.WaveFailed {
		return ""
	}
	if ro.Status.Phase == fleetv1alpha1.RolloutPaused {
		return "Paused (spec.intent Pause): no new target Promotion starts: kargo-fleet resume -n " + ro.Namespace + " " +
			ro.Spec.FleetStage + ", or in the Kargo UI Promote Freight " + ShortFreight(ro.Spec.Freight.Name) + " into wave Stage " +
			render.WaveStageName(ro.Spec.FleetStage, StandingWave(ro)) + "."
	}
	if wp.Phase == fleetv1alpha1.WaveHalted {
		return "Halted: target Promotions in flight finish, no new one starts."
	}
	if wp.Waiting == "" {
		return ""
	}
	return "Waiting: " + strings.TrimSuffix(wp.Waiting, ".") + "."
}

// describeAnalysis says a wave analysis's verdict and each metric's last
// value.
func describeAnalysis(a *fleetv1alpha1.WaveAnalysisStatus) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Analysis: %s", a.Phase)
	for _, m := range a.Metrics {
		fmt.Fprintf(&b, "; %s %s", m.Name, m.Phase)
		if m.Last != nil && m.Last.Value != "" {
			fmt.Fprintf(&b, " (last value %s)", m.Last.Value)
		}
	}
	if a.Phase == fleetv1alpha1.AnalysisFailed || a.Phase == fleetv1alpha1.AnalysisAskApproval {
		fmt.Fprintf(&b, ": %s", strings.TrimSuffix(a.Message, "."))
	}
	return b.String() + "."
}

// waveOf returns the progress of the named wave, or nil.
func waveOf(ro *fleetv1alpha1.FleetRollout, wave string) *fleetv1alpha1.WaveProgress {
	for i := range ro.Status.Waves {
		if ro.Status.Waves[i].Name == wave {
			return &ro.Status.Waves[i]
		}
	}
	return nil
}

// ShortFreight shortens a Freight name to its first seven characters, as
// Kargo's UI shows it.
func ShortFreight(name string) string {
	if len(name) > 7 {
		return name[:7]
	}
	return name
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
