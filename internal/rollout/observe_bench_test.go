package rollout

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
	"github.com/kargo-fleet/kargo-fleet/internal/render"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

// benchFleetSizes are the fleet sizes the reconcile benchmarks run at.
var benchFleetSizes = []int{1000, 10000}

// benchInFlight is the general wave's maxConcurrent, as in the scale run.
const benchInFlight = 500

// reconcileBench is a forward rollout half-way through its general wave,
// as one reconcile sees it: every target Stage, the rollout's Promotions
// of the targets done and in flight, and a full wave of slots of which a
// sixteenth just freed.
func reconcileBench(b *testing.B, n int) Snapshot {
	b.Helper()
	now := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	members := make([]plan.Target, n)
	for i := range members {
		id := fmt.Sprintf("t-%05d", i)
		members[i] = plan.Target{ID: id, Name: id, Labels: map[string]string{"tier": "standard"}}
	}
	p := &plan.WavePlan{Hash: "bench", Waves: []plan.PlannedWave{
		{Name: "general", MaxConcurrent: benchInFlight, Members: members, ProgressDeadline: time.Hour},
	}}
	ro := &fleetv1alpha1.FleetRollout{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "prod-1", CreationTimestamp: metav1.NewTime(now.Add(-time.Hour)),
			Annotations: map[string]string{fleetv1alpha1.WaveRequestAnnotationPrefix + "general": "prod-general.x.f2"}},
		Spec: fleetv1alpha1.FleetRolloutSpec{FleetStage: "prod", Direction: fleetv1alpha1.DirectionForward,
			Freight: fleetv1alpha1.FreightReference{Name: "f2"}},
		Status: fleetv1alpha1.FleetRolloutStatus{Phase: fleetv1alpha1.RolloutProgressing},
	}
	fs := testutil.MakeFleetStage("shop", "prod").Obj()
	fs.Spec.Waves = []fleetv1alpha1.Wave{{Name: "general", MaxConcurrent: ptrTo(intstr.FromInt32(benchInFlight))}}
	s := Snapshot{Rollout: ro, FleetStage: fs, Plan: p, Recorded: make(map[string]types.UID, n)}
	done, inFlight := n/2, benchInFlight-benchInFlight/16
	for i, t := range members {
		name := render.TargetStageName(fs.Name, t.ID)
		freight := "f1"
		if i < done {
			freight = "f2"
		}
		st := testutil.MakeStage("shop", name).Target(fs.Name, "general", t.ID).Current(freight).Obj()
		st.UID = types.UID("uid-" + name)
		st.Status.Health = &kargo.Health{Status: kargo.HealthHealthy}
		s.Stages = append(s.Stages, st)
		s.Recorded[name] = st.UID
		if i >= done+inFlight {
			continue
		}
		phase := kargo.PromotionSucceeded
		if i >= done {
			phase = kargo.PromotionRunning
		}
		pr := testutil.MakePromotion("shop", name, "f2").Name(name + ".01m8b6hvpe02yn71tjvcez122z.f2").Labels(map[string]string{
			fleetv1alpha1.FleetStageLabel: fs.Name, fleetv1alpha1.RolloutLabel: ro.Name,
			fleetv1alpha1.WaveLabel: "general", fleetv1alpha1.TargetLabel: t.ID,
		}).Phase(phase).Obj()
		pr.CreationTimestamp = metav1.NewTime(now.Add(-time.Minute))
		s.Promotions = append(s.Promotions, pr)
	}
	idx, err := NewIndex(ro, fs, p)
	require.NoError(b, err)
	s.Index = idx
	return s
}

func ptrTo[T any](v T) *T { return &v }

// BenchmarkReconcileDecision measures the pure part of one FleetRollout
// reconcile, Observe then Decide, with the schedule index built once per
// plan as the controller keeps it. It walks every member, so it grows with
// the fleet; per target it stays flat, and the controller runs it once per
// batch of starts (up to the wave's free slots), not once per target.
func BenchmarkReconcileDecision(b *testing.B) {
	for _, n := range benchFleetSizes {
		b.Run(fmt.Sprintf("targets=%d", n), func(b *testing.B) {
			s := reconcileBench(b, n)
			now := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
			obs, err := Observe(s, now)
			require.NoError(b, err)
			d := Decide(obs.Observation)
			require.Len(b, d.Start, benchInFlight/16, d.Message)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				obs, _ := Observe(s, now)
				Decide(obs.Observation)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/target")
		})
	}
}

// BenchmarkNewIndex measures what the controller no longer pays per
// reconcile: building the schedule index of the plan.
func BenchmarkNewIndex(b *testing.B) {
	for _, n := range benchFleetSizes {
		b.Run(fmt.Sprintf("targets=%d", n), func(b *testing.B) {
			s := reconcileBench(b, n)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				_, _ = NewIndex(s.Rollout, s.FleetStage, s.Plan)
			}
		})
	}
}

// BenchmarkDecisionAfterEvent measures one decision after an event with a
// warm Tracker: one target's Promotion changed phase (a new object in the
// cache, as the informer hands out), then Observe and Decide. Only that
// target is interpreted again; the rest of the cost is reading which
// objects changed and Decide's walk of the waves.
func BenchmarkDecisionAfterEvent(b *testing.B) {
	for _, n := range benchFleetSizes {
		b.Run(fmt.Sprintf("targets=%d", n), func(b *testing.B) {
			s := reconcileBench(b, n)
			now := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
			tr := NewTracker()
			_, err := tr.Observe(s, now)
			require.NoError(b, err)
			// The last target in flight, and the same Promotion succeeded.
			i := len(s.Promotions) - 1
			running := s.Promotions[i]
			succeeded := running.DeepCopy()
			succeeded.ResourceVersion, succeeded.Status.Phase = "2", kargo.PromotionSucceeded
			events := [2]*kargo.Promotion{succeeded, running}
			b.ReportAllocs()
			b.ResetTimer()
			k := 0
			for b.Loop() {
				s.Promotions[i] = events[k%2]
				k++
				obs, _ := tr.Observe(s, now)
				Decide(obs.Observation)
			}
		})
	}
}
