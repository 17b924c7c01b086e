package drift

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

func rollout(name, freight string, dir fleetv1alpha1.RolloutDirection, phase fleetv1alpha1.RolloutPhase, rollbackOf string) *fleetv1alpha1.FleetRollout {
	return &fleetv1alpha1.FleetRollout{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: fleetv1alpha1.FleetRolloutSpec{Freight: fleetv1alpha1.FreightReference{Name: freight}, Direction: dir,
			RollbackOf: rollbackOf},
		Status: fleetv1alpha1.FleetRolloutStatus{Phase: phase},
	}
}

func TestIntentOf(t *testing.T) {
	t.Parallel()
	good := &fleetv1alpha1.FreightReference{Name: "a"}
	tests := []struct {
		name     string
		lastGood *fleetv1alpha1.FreightReference
		current  string
		rollouts []*fleetv1alpha1.FleetRollout
		want     Intent
	}{
		{name: "nothing", want: Intent{}},
		{name: "last good only", lastGood: good,
			rollouts: []*fleetv1alpha1.FleetRollout{rollout("r1", "a", fleetv1alpha1.DirectionForward, fleetv1alpha1.RolloutSucceeded, "")},
			want:     Intent{Freight: "a"}},
		{name: "open forward rollout explains its Freight", lastGood: good,
			rollouts: []*fleetv1alpha1.FleetRollout{rollout("r2", "b", fleetv1alpha1.DirectionForward, fleetv1alpha1.RolloutProgressing, "")},
			want:     Intent{Freight: "a", Explained: []string{"b"}}},
		{name: "open rollback explains what it undoes", lastGood: good,
			rollouts: []*fleetv1alpha1.FleetRollout{
				rollout("r2", "b", fleetv1alpha1.DirectionForward, fleetv1alpha1.RolloutFailed, ""),
				rollout("r2-rollback", "a", fleetv1alpha1.DirectionRollback, fleetv1alpha1.RolloutProgressing, "r2"),
			},
			want: Intent{Freight: "a", Explained: []string{"a", "b"}}},
		{name: "first rollout: its Freight is intended",
			rollouts: []*fleetv1alpha1.FleetRollout{rollout("r1", "a", fleetv1alpha1.DirectionForward, fleetv1alpha1.RolloutProgressing, "")},
			want:     Intent{Freight: "a", Explained: []string{"a"}}},
		{name: "finished rollout not yet recorded still explains", lastGood: good, current: "r2",
			rollouts: []*fleetv1alpha1.FleetRollout{rollout("r2", "b", fleetv1alpha1.DirectionForward, fleetv1alpha1.RolloutSucceeded, "")},
			want:     Intent{Freight: "a", Explained: []string{"b"}}},
		{name: "finished failed rollout explains nothing", lastGood: good,
			rollouts: []*fleetv1alpha1.FleetRollout{rollout("r2", "b", fleetv1alpha1.DirectionForward, fleetv1alpha1.RolloutAborted, "")},
			want:     Intent{Freight: "a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, IntentOf(&fleetv1alpha1.FleetStageStatus{LastGoodFreight: tt.lastGood, CurrentRollout: tt.current}, tt.rollouts))
		})
	}
}

func TestDetect(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		intent  Intent
		targets []Target
		want    []Drift
	}{
		{name: "no intent, no drift", targets: []Target{{Name: "t1", Stage: "s1", Freight: []string{"x"}}}},
		{name: "on intended Freight", intent: Intent{Freight: "a"},
			targets: []Target{{Name: "t1", Stage: "s1", Freight: []string{"a"}}}},
		{name: "no Freight yet", intent: Intent{Freight: "a"},
			targets: []Target{{Name: "t1", Stage: "s1"}}},
		{name: "moved by an open rollout", intent: Intent{Freight: "a", Explained: []string{"b"}},
			targets: []Target{{Name: "t1", Stage: "s1", Freight: []string{"b"}}}},
		{name: "manual promotion", intent: Intent{Freight: "a", Explained: []string{"b"}},
			targets: []Target{
				{Name: "t2", Stage: "s2", Freight: []string{"c"}},
				{Name: "t1", Stage: "s1", Freight: []string{"a"}},
				{Name: "t0", Stage: "s0", Freight: []string{"d", "e"}},
			},
			want: []Drift{
				{Target: "t0", Stage: "s0", Freight: "d+e", Intended: "a"},
				{Target: "t2", Stage: "s2", Freight: "c", Intended: "a"},
			}},
		{name: "one origin of several intended", intent: Intent{Freight: "a"},
			targets: []Target{{Name: "t1", Stage: "s1", Freight: []string{"z", "a"}}}},
		{name: "break-glass Freight is intended on its target only",
			intent: Intent{Freight: "a", BreakGlass: map[string]string{"s1": "hotfix"}},
			targets: []Target{
				{Name: "t1", Stage: "s1", Freight: []string{"hotfix"}},
				{Name: "t2", Stage: "s2", Freight: []string{"hotfix"}},
				{Name: "t3", Stage: "s3", Freight: []string{"c"}},
			},
			want: []Drift{
				{Target: "t2", Stage: "s2", Freight: "hotfix", Intended: "a"},
				{Target: "t3", Stage: "s3", Freight: "c", Intended: "a"},
			}},
		{name: "an older break-glass Freight is drift again", intent: Intent{Freight: "a", BreakGlass: map[string]string{"s1": "new"}},
			targets: []Target{{Name: "t1", Stage: "s1", Freight: []string{"old"}}},
			want:    []Drift{{Target: "t1", Stage: "s1", Freight: "old", Intended: "a"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, Detect(tt.intent, tt.targets))
		})
	}
}

func TestStatus(t *testing.T) {
	t.Parallel()
	require.Nil(t, Status(nil))
	var drifts []Drift
	for i := range 25 {
		drifts = append(drifts, Drift{Target: "t" + strconv.Itoa(i), Stage: "s", Freight: "b", Intended: "a"})
	}
	st := Status(drifts)
	require.EqualValues(t, 25, st.Count)
	require.Len(t, st.Examples, MaxExamples)
	require.Equal(t, fleetv1alpha1.DriftedTarget{Target: "t0", Stage: "s", Freight: "b", IntendedFreight: "a"}, st.Examples[0])
}

func TestNewly(t *testing.T) {
	t.Parallel()
	a := Drift{Target: "t1", Stage: "s1", Freight: "b", Intended: "a"}
	b := Drift{Target: "t2", Stage: "s2", Freight: "b", Intended: "a"}
	require.Equal(t, []Drift{b}, Newly(map[string]bool{a.Key(): true}, []Drift{a, b}))
	require.NotEqual(t, a.Key(), Drift{Target: "t1", Stage: "s1", Freight: "c", Intended: "a"}.Key())
}

func TestSetCondition(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		st         *fleetv1alpha1.DriftStatus
		wantStatus metav1.ConditionStatus
		wantReason string
		wantMsg    string
	}{
		{name: "none", wantStatus: metav1.ConditionFalse, wantReason: fleetv1alpha1.NoDriftReason},
		{name: "one", st: &fleetv1alpha1.DriftStatus{Count: 1, Examples: []fleetv1alpha1.DriftedTarget{
			{Target: "t1", Stage: "s1", Freight: "b", IntendedFreight: "a"}}},
			wantStatus: metav1.ConditionTrue, wantReason: fleetv1alpha1.TargetsDriftedReason,
			wantMsg: "Target t1 runs Freight b instead of a"},
		{name: "many", st: &fleetv1alpha1.DriftStatus{Count: 12, Examples: []fleetv1alpha1.DriftedTarget{
			{Target: "t1", Stage: "s1", Freight: "b", IntendedFreight: "a"}}},
			wantStatus: metav1.ConditionTrue, wantReason: fleetv1alpha1.TargetsDriftedReason,
			wantMsg: "12 targets run Freight the fleet does not intend, e.g. t1 runs b instead of a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var conds []metav1.Condition
			SetCondition(&conds, tt.st, nil, 3)
			c := meta.FindStatusCondition(conds, fleetv1alpha1.DriftedCondition)
			require.NotNil(t, c)
			require.Equal(t, tt.wantStatus, c.Status)
			require.Equal(t, tt.wantReason, c.Reason)
			require.EqualValues(t, 3, c.ObservedGeneration)
			if tt.wantMsg != "" {
				require.Equal(t, tt.wantMsg, c.Message)
			}
		})
	}
}

func TestPlanReverts(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	d1 := Drift{Target: "t1", Stage: "s1", Freight: "b", Intended: "a"}
	d2 := Drift{Target: "t2", Stage: "s2", Freight: "b", Intended: "a"}
	d3 := Drift{Target: "t3", Stage: "s3", Freight: "b", Intended: "a"}
	tests := []struct {
		name        string
		in          RevertInput
		wantRevert  []Drift
		wantWaiting string
	}{
		{name: "nothing drifted", in: RevertInput{WindowsAllow: true}},
		{name: "reverts each drift", in: RevertInput{Drifts: []Drift{d1, d2}, WindowsAllow: true},
			wantRevert: []Drift{d1, d2}},
		{name: "once per drift", in: RevertInput{Drifts: []Drift{d1, d2}, WindowsAllow: true,
			Attempts: map[string]Attempt{d1.Key(): {Created: now}}},
			wantRevert: []Drift{d2}},
		{name: "a drift that ended and came back is reverted again", in: RevertInput{Drifts: []Drift{d1}, WindowsAllow: true,
			Attempts: map[string]Attempt{d1.Key(): {Created: now}}, Cleared: map[string]time.Time{d1.Key(): now.Add(time.Minute)}},
			wantRevert: []Drift{d1}},
		{name: "open rollout waits", in: RevertInput{Drifts: []Drift{d1}, WindowsAllow: true, RolloutOpen: true},
			wantWaiting: "a rollout is open"},
		{name: "closed windows wait", in: RevertInput{Drifts: []Drift{d1}},
			wantWaiting: "the change windows are closed"},
		{name: "in-flight bound", in: RevertInput{Drifts: []Drift{d1, d2, d3}, WindowsAllow: true, InFlight: 1, MaxInFlight: 2},
			wantRevert: []Drift{d1}, wantWaiting: "revert Promotions in flight reached the limit"},
		{name: "nothing due does not wait", in: RevertInput{Drifts: []Drift{d1}, RolloutOpen: true,
			Attempts: map[string]Attempt{d1.Key(): {Created: now}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := PlanReverts(tt.in)
			require.Equal(t, tt.wantRevert, got.Revert)
			require.Equal(t, tt.wantWaiting, got.Waiting)
		})
	}
}

func TestMaxInFlight(t *testing.T) {
	t.Parallel()
	require.Equal(t, DefaultMaxRevertsInFlight, MaxInFlight(&fleetv1alpha1.FleetPolicy{}))
	require.Equal(t, 2, MaxInFlight(&fleetv1alpha1.FleetPolicy{Constraints: []fleetv1alpha1.ConcurrencyConstraint{
		{Name: "a", MaxInFlight: 5}, {Name: "b", MaxInFlight: 2}}}))
}

func TestBreakGlassOf(t *testing.T) {
	t.Parallel()
	promo := func(name, stage, freight string) kargo.Promotion {
		p := kargo.Promotion{Spec: kargo.PromotionSpec{Stage: stage, Freight: freight}}
		p.Name = name
		return p
	}
	got := BreakGlassOf([]kargo.Promotion{
		promo("s1.01j2.new0000", "s1", "new"),
		promo("s1.01j1.old0000", "s1", "old"),
		promo("s2.01j1.x000000", "s2", "x"),
	})
	require.Equal(t, map[string]string{"s1": "new", "s2": "x"}, got)
	require.Empty(t, BreakGlassOf(nil))
}
