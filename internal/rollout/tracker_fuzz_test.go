package rollout

import (
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
	"github.com/kargo-fleet/kargo-fleet/internal/policy"
	"github.com/kargo-fleet/kargo-fleet/internal/render"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

// trackerFleet is a small rollout whose objects a sequence of events
// changes as the informer cache would: every change is a new object with a
// new resourceVersion.
type trackerFleet struct {
	s       Snapshot
	now     time.Time
	ids     []string
	rv      int
	created int
	// promotions holds the Promotions by name, in creation order.
	promotions []*kargo.Promotion
	stages     map[string]*kargo.Stage
}

var trackerPhases = []kargo.PromotionPhase{"", kargo.PromotionPending, kargo.PromotionRunning,
	kargo.PromotionSucceeded, kargo.PromotionFailed, kargo.PromotionErrored, kargo.PromotionAborted}

func newTrackerFleet(t testing.TB) *trackerFleet {
	t.Helper()
	now := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	f := &trackerFleet{now: now, stages: map[string]*kargo.Stage{}}
	var canary, general []plan.Target
	for i := range 8 {
		id := fmt.Sprintf("t-%d", i)
		f.ids = append(f.ids, id)
		tg := plan.Target{ID: id, Name: id, Labels: map[string]string{"zone": strconv.Itoa(i % 3)}}
		if i < 3 {
			canary = append(canary, tg)
		} else {
			general = append(general, tg)
		}
	}
	p := &plan.WavePlan{Hash: "h", Waves: []plan.PlannedWave{
		{Name: "canary", MaxConcurrent: 2, Members: canary, ProgressDeadline: 30 * time.Minute, UnhealthyGrace: 5 * time.Minute},
		{Name: "general", MaxConcurrent: 3, Members: general, ProgressDeadline: time.Hour, MaxFailures: 1},
	}}
	ro := &fleetv1alpha1.FleetRollout{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "prod-1", UID: "ro-uid",
			CreationTimestamp: metav1.NewTime(now.Add(-time.Hour)),
			Annotations:       map[string]string{fleetv1alpha1.WaveRequestAnnotationPrefix + "canary": "prod-canary.x.f2"}},
		Spec: fleetv1alpha1.FleetRolloutSpec{FleetStage: "prod", Direction: fleetv1alpha1.DirectionForward,
			Freight: fleetv1alpha1.FreightReference{Name: "f2"}},
		Status: fleetv1alpha1.FleetRolloutStatus{Phase: fleetv1alpha1.RolloutProgressing},
	}
	fs := testutil.MakeFleetStage("shop", "prod").Obj()
	fs.UID, fs.Generation = "fs-uid", 1
	fs.Spec.Waves = []fleetv1alpha1.Wave{{Name: "canary", MaxConcurrent: ptrTo(intstr.FromInt32(2))},
		{Name: "general", MaxConcurrent: ptrTo(intstr.FromInt32(3))}}
	f.s = Snapshot{Rollout: ro, FleetStage: fs, Plan: p, Recorded: map[string]types.UID{}}
	idx, err := NewIndex(ro, fs, p)
	require.NoError(t, err)
	f.s.Index = idx
	for i, id := range f.ids {
		st := testutil.MakeStage("shop", f.stageName(i)).Target(fs.Name, "", id).Current("f1").Obj()
		st.UID = types.UID("uid-" + id)
		st.Status.Health = &kargo.Health{Status: kargo.HealthHealthy}
		f.putStage(st)
		f.s.Recorded[st.Name] = st.UID
	}
	f.sync()
	return f
}

func (f *trackerFleet) stageName(i int) string { return render.TargetStageName("prod", f.ids[i]) }

func (f *trackerFleet) nextRV() string { f.rv++; return strconv.Itoa(f.rv) }

// putStage stores a new Stage object under its name.
func (f *trackerFleet) putStage(st *kargo.Stage) {
	st.ResourceVersion = f.nextRV()
	f.stages[st.Name] = st
}

// changeStage replaces target i's Stage by a changed copy.
func (f *trackerFleet) changeStage(i int, change func(*kargo.Stage)) {
	cur := f.stages[f.stageName(i)]
	if cur == nil {
		return
	}
	st := cur.DeepCopy()
	change(st)
	f.putStage(st)
}

// promote creates a Promotion of target i, of this rollout or (other) of
// another rollout of the fleet.
func (f *trackerFleet) promote(i int, phase kargo.PromotionPhase, other bool) {
	f.created++
	rollout := f.s.Rollout.Name
	if other {
		rollout = "prod-0"
	}
	name := fmt.Sprintf("%s.%04d.f2", f.stageName(i), f.created)
	p := testutil.MakePromotion("shop", f.stageName(i), "f2").Name(name).Labels(map[string]string{
		fleetv1alpha1.FleetStageLabel: "prod", fleetv1alpha1.RolloutLabel: rollout, fleetv1alpha1.TargetLabel: f.ids[i],
	}).Phase(phase).Obj()
	p.CreationTimestamp = metav1.NewTime(f.now.Add(-time.Duration(40-f.created%40) * time.Minute))
	p.ResourceVersion = f.nextRV()
	if phase.IsTerminal() {
		p.Status.FinishedAt = &metav1.Time{Time: f.now.Add(-time.Minute)}
	}
	f.promotions = append(f.promotions, p)
}

// changePromotion replaces the k-th Promotion by a changed copy.
func (f *trackerFleet) changePromotion(k int, change func(*kargo.Promotion)) {
	if len(f.promotions) == 0 {
		return
	}
	k %= len(f.promotions)
	p := f.promotions[k].DeepCopy()
	change(p)
	p.ResourceVersion = f.nextRV()
	f.promotions[k] = p
}

// sync lists the objects into the snapshot, as the reconciler does.
func (f *trackerFleet) sync() {
	f.s.Promotions = slices.Clone(f.promotions)
	f.s.Stages = f.s.Stages[:0:0]
	for i := range f.ids {
		if st := f.stages[f.stageName(i)]; st != nil {
			f.s.Stages = append(f.s.Stages, st)
		}
	}
	// The cache lists in no particular order.
	if f.rv%2 == 1 {
		slices.Reverse(f.s.Stages)
	}
}

// apply applies one event, chosen by op and arg.
func (f *trackerFleet) apply(op, arg byte) {
	i := int(arg) % len(f.ids)
	switch op % 18 {
	case 0:
		f.promote(i, trackerPhases[int(arg/8)%len(trackerPhases)], false)
	case 1:
		f.changePromotion(int(arg), func(p *kargo.Promotion) {
			p.Status.Phase = trackerPhases[int(arg/3)%len(trackerPhases)]
		})
	case 2:
		if len(f.promotions) > 0 {
			f.promotions = slices.Delete(f.promotions, int(arg)%len(f.promotions), int(arg)%len(f.promotions)+1)
		}
	case 3:
		// The Stage records the Freight.
		f.changeStage(i, func(st *kargo.Stage) {
			now := testutil.MakeStage("shop", st.Name).Current([]string{"f2", "f1"}[arg%2]).Obj()
			st.Status.FreightHistory = append(now.Status.FreightHistory, st.Status.FreightHistory...)
		})
	case 4:
		f.changeStage(i, func(st *kargo.Stage) {
			st.Status.Health = &kargo.Health{Status: []string{kargo.HealthHealthy, kargo.HealthUnhealthy, ""}[arg%3]}
		})
	case 5:
		f.changeStage(i, func(st *kargo.Stage) {
			if len(st.Status.FreightHistory) > 0 {
				st.Status.FreightHistory[0].VerificationHistory = []kargo.VerificationInfo{
					{Phase: []string{kargo.VerificationSuccessful, kargo.VerificationFailed, "Running"}[arg%3]}}
			}
		})
	case 6:
		delete(f.stages, f.stageName(i))
	case 7:
		// Re-created under the same name, with a new UID.
		st := testutil.MakeStage("shop", f.stageName(i)).Target("prod", "", f.ids[i]).Current("f1").Obj()
		st.UID = types.UID(fmt.Sprintf("uid-%s-%d", f.ids[i], f.rv))
		f.putStage(st)
	case 8:
		if st := f.stages[f.stageName(i)]; st != nil && arg%2 == 0 {
			f.s.Recorded[st.Name] = st.UID
		} else {
			delete(f.s.Recorded, f.stageName(i))
		}
	case 9:
		f.promote(i, kargo.PromotionRunning, true)
	case 10:
		f.setRecords(i, arg)
	case 11:
		f.setVerdict(i, arg)
	case 12:
		f.now = f.now.Add(time.Duration(arg) * time.Minute)
	case 13:
		f.setExpected(i, arg)
	case 14:
		f.changePromotion(int(arg), func(p *kargo.Promotion) {
			p.Annotations = map[string]string{fleetv1alpha1.StageUIDAnnotation: "uid-old"}
		})
	case 15:
		f.changeStage(i, func(st *kargo.Stage) {
			if arg%2 == 0 {
				st.Annotations = map[string]string{fleetv1alpha1.PruneAnnotation: "true"}
			} else {
				st.Labels[fleetv1alpha1.TargetLabel] = "someone-else"
			}
		})
	case 16:
		f.promoteWave(arg)
	case 17:
		ro := f.s.Rollout.DeepCopy()
		ro.ResourceVersion = f.nextRV()
		ro.Spec.Intent = []fleetv1alpha1.RolloutIntent{fleetv1alpha1.IntentRun, fleetv1alpha1.IntentPause}[arg%2]
		f.s.Rollout = ro
	}
}

// promoteWave creates the wave Stage Promotion of wave canary that asked
// for it, or one of wave general.
func (f *trackerFleet) promoteWave(arg byte) {
	wave, name := "canary", "prod-canary.x.f2"
	if arg%2 == 1 {
		f.created++
		wave, name = "general", fmt.Sprintf("prod-general.%04d.f2", f.created)
	}
	p := testutil.MakePromotion("shop", render.WaveStageName("prod", wave), "f2").Name(name).
		Phase(trackerPhases[int(arg/2)%len(trackerPhases)]).Obj()
	p.CreationTimestamp = metav1.NewTime(f.now)
	p.ResourceVersion = f.nextRV()
	f.promotions = append(f.promotions, p)
}

// setRecords sets or clears the controller's records of target i: Kargo's
// refusal and the time its Stage name was first seen taken. The reconciler
// hands new maps each time.
func (f *trackerFleet) setRecords(i int, arg byte) {
	refused, taken := maps2(f.s.Refused), maps2(f.s.TakenSince)
	id := f.ids[i]
	switch arg % 4 {
	case 0:
		refused[id] = Refusal{Since: f.now.Add(-time.Duration(arg) * time.Minute), Message: "not available"}
	case 1:
		delete(refused, id)
	case 2:
		taken[id] = f.now.Add(-time.Duration(arg) * time.Minute)
	case 3:
		delete(taken, id)
	}
	f.s.Refused, f.s.TakenSince = refused, taken
}

// setVerdict blocks or allows target i (policy verdicts are rebuilt on
// every reconcile).
func (f *trackerFleet) setVerdict(i int, arg byte) {
	blocked := map[string]policy.Verdict{}
	for id, v := range f.s.Blocked {
		blocked[id] = policy.Verdict{Blocks: slices.Clone(v.Blocks)}
	}
	if arg%3 == 0 {
		delete(blocked, f.ids[i])
	} else {
		blocked[f.ids[i]] = policy.Verdict{Blocks: []policy.Block{{Policy: "p", Rule: strconv.Itoa(int(arg)), Hold: arg%2 == 0}}}
	}
	f.s.Blocked = blocked
}

// setExpected adds or removes an expectation of target i or of the wave
// Stage Promotion of a wave.
func (f *trackerFleet) setExpected(i int, arg byte) {
	expected := maps2(f.s.Expected)
	key := f.ids[i]
	if arg%4 == 3 {
		key = WaveKey("general")
	}
	if arg%2 == 0 {
		expected[key] = true
	} else {
		delete(expected, key)
	}
	f.s.Expected = expected
}

// maps2 copies a map, making an empty one of nil.
func maps2[K comparable, V any](m map[K]V) map[K]V {
	out := make(map[K]V, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// requireSameAsObserve applies ops (pairs of op and argument) one by one
// and checks, after each, that the Tracker observes and decides exactly as
// a fresh Observe of the same snapshot.
func requireSameAsObserve(t *testing.T, ops []byte) {
	t.Helper()
	f := newTrackerFleet(t)
	tr := NewTracker()
	for step := 0; ; step += 2 {
		want, err := Observe(f.s, f.now)
		require.NoError(t, err)
		wantDecision := Decide(want.Observation)
		got, err := tr.Observe(f.s, f.now)
		require.NoError(t, err)
		slices.Sort(want.Seen)
		slices.Sort(got.Seen)
		require.Equal(t, want, got, "observation after %d event(s) %v", step/2, ops[:step])
		require.Equal(t, wantDecision, Decide(got.Observation), "decision after %d event(s) %v", step/2, ops[:step])
		if step+1 >= len(ops) {
			return
		}
		f.apply(ops[step], ops[step+1])
		f.sync()
	}
}

// trackerStream returns n pseudo-random bytes from seed (xorshift: the
// sequences are reproducible).
func trackerStream(seed uint64, n int) []byte {
	x := seed*0x9E3779B97F4A7C15 + 1
	out := make([]byte, n)
	for i := range out {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		out[i] = byte(x >> 24)
	}
	return out
}

func TestTrackerObservesAsObserve(t *testing.T) {
	t.Parallel()
	for seed := range uint64(300) {
		t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) {
			t.Parallel()
			requireSameAsObserve(t, trackerStream(seed, 120))
		})
	}
}

func FuzzTrackerObservesAsObserve(f *testing.F) {
	f.Add([]byte{0, 3, 1, 27, 3, 3, 12, 20})
	f.Add([]byte{7, 1, 8, 0, 0, 25, 14, 0, 3, 1})
	f.Add(trackerStream(1, 64))
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 400 {
			ops = ops[:400]
		}
		requireSameAsObserve(t, ops)
	})
}
