package fleetrollout

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

func TestNames(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 60)
	for _, name := range []string{
		ForwardName("prod", "f1", "prod-pilot.01abc.f1"), ForwardName(long, "f1", "p"),
		RollbackName("prod-1234567890"), RollbackName(long),
	} {
		require.Empty(t, validation.IsValidLabelValue(name), name)
		require.Empty(t, validation.IsDNS1123Subdomain(name), name)
	}
	require.Equal(t, "prod-1234567890-rb", RollbackName("prod-1234567890"))
	require.NotEqual(t, RollbackName(long), RollbackName(long+"b"), "long names keep a hash of the full name")
	require.Equal(t, ForwardName("prod", "f1", "p1"), ForwardName("prod", "f1", "p1"), "deterministic")
	require.NotEqual(t, ForwardName("prod", "f1", "p1"), ForwardName("prod", "f1", "p2"), "a new Promotion gets a new rollout")
	require.Equal(t, "prod-x-plan", SnapshotName("prod-x"))
}

func TestNewRollbackAndForward(t *testing.T) {
	t.Parallel()
	of := NewForward(Forward{Namespace: "shop", FleetStage: "prod", Freight: fleetv1alpha1.FreightReference{Name: "f2"},
		Promotion: "prod-pilot.1.f2", Alias: "fleet::start", Actor: "admin", Wave: "pilot"})
	require.Equal(t, "prod-pilot.1.f2", of.Annotations[WaveRequestAnnotation("pilot")], "the wave request is in the create")
	require.Equal(t, map[string]string{"pilot": "prod-pilot.1.f2"}, WaveRequests(of))
	require.Equal(t, "prod-pilot.1.f2/fleet::start", of.Annotations[fleetv1alpha1.StepKeyAnnotation])
	promotion, alias, ok := ParseStepKey(of.Annotations[fleetv1alpha1.StepKeyAnnotation])
	require.True(t, ok)
	require.Equal(t, []string{"prod-pilot.1.f2", "fleet::start"}, []string{promotion, alias})

	rb := NewRollback(Rollback{Of: of, Freight: fleetv1alpha1.FreightReference{Name: "f1"}, Actor: AutomaticRollbackActor})
	require.Equal(t, RollbackName(of.Name), rb.Name)
	require.Equal(t, fleetv1alpha1.DirectionRollback, rb.Spec.Direction)
	require.Equal(t, of.Name, rb.Spec.RollbackOf)
	require.Equal(t, map[string]string{fleetv1alpha1.FleetStageLabel: "prod", fleetv1alpha1.FreightLabel: "f1"}, rb.Labels,
		"every rollback carries the FleetStage and Freight labels")
}

func TestFreightLabelValue(t *testing.T) {
	t.Parallel()
	require.Equal(t, "97e5d51fdfb4fc056797ea8d02343f9429619d8d", FreightLabelValue("97e5d51fdfb4fc056797ea8d02343f9429619d8d"))
	v := FreightLabelValue(strings.Repeat("x", 70))
	require.Empty(t, validation.IsValidLabelValue(v))
	require.True(t, strings.HasPrefix(v, "h-"))
}

// rollouts builds n forward rollouts created a minute apart, all finished
// unless listed in open.
func rollouts(n int, open ...int) []*fleetv1alpha1.FleetRollout {
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	var out []*fleetv1alpha1.FleetRollout
	for i := 1; i <= n; i++ {
		ro := &fleetv1alpha1.FleetRollout{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("r%02d", i),
			CreationTimestamp: metav1.NewTime(t0.Add(time.Duration(i) * time.Minute))},
			Spec:   fleetv1alpha1.FleetRolloutSpec{Direction: fleetv1alpha1.DirectionForward},
			Status: fleetv1alpha1.FleetRolloutStatus{Phase: fleetv1alpha1.RolloutSucceeded}}
		for _, o := range open {
			if o == i {
				ro.Status.Phase = fleetv1alpha1.RolloutProgressing
			}
		}
		out = append(out, ro)
	}
	return out
}

func rollbackOf(of *fleetv1alpha1.FleetRollout, phase fleetv1alpha1.RolloutPhase) *fleetv1alpha1.FleetRollout {
	return &fleetv1alpha1.FleetRollout{ObjectMeta: metav1.ObjectMeta{Name: RollbackName(of.Name),
		CreationTimestamp: metav1.NewTime(of.CreationTimestamp.Add(30 * time.Second))},
		Spec:   fleetv1alpha1.FleetRolloutSpec{Direction: fleetv1alpha1.DirectionRollback, RollbackOf: of.Name},
		Status: fleetv1alpha1.FleetRolloutStatus{Phase: phase}}
}

func names(ros []*fleetv1alpha1.FleetRollout) []string {
	out := []string{}
	for _, ro := range ros {
		out = append(out, ro.Name)
	}
	return out
}

func TestExpired(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		all   func() []*fleetv1alpha1.FleetRollout
		limit int
		want  []string
	}{
		{name: "within the limit", all: func() []*fleetv1alpha1.FleetRollout { return rollouts(10) }, limit: 10, want: []string{}},
		{name: "rollout 12 arrives: rollout 1 goes", all: func() []*fleetv1alpha1.FleetRollout { return rollouts(12, 12) },
			limit: 10, want: []string{"r01"}},
		{name: "unfinished rollouts never go, nor count", all: func() []*fleetv1alpha1.FleetRollout { return rollouts(12, 1, 2) },
			limit: 10, want: []string{}},
		{name: "a rollback goes with its rollout", all: func() []*fleetv1alpha1.FleetRollout {
			all := rollouts(3)
			return append(all, rollbackOf(all[0], fleetv1alpha1.RolloutSucceeded), rollbackOf(all[2], fleetv1alpha1.RolloutSucceeded))
		}, limit: 2, want: []string{"r01", "r01-rb"}},
		{name: "a running rollback keeps its rollout", all: func() []*fleetv1alpha1.FleetRollout {
			all := rollouts(3)
			return append(all, rollbackOf(all[0], fleetv1alpha1.RolloutRollingBack))
		}, limit: 1, want: []string{"r02"}},
		{name: "a retried rollback keeps its rollout while the retry runs", all: func() []*fleetv1alpha1.FleetRollout {
			all := rollouts(3)
			retry := rollbackOf(all[0], fleetv1alpha1.RolloutRollingBack)
			retry.Name = RollbackAttemptName(all[0].Name, 2)
			return append(all, rollbackOf(all[0], fleetv1alpha1.RolloutAborted), retry)
		}, limit: 1, want: []string{"r02"}},
		{name: "every finished attempt goes with its rollout", all: func() []*fleetv1alpha1.FleetRollout {
			all := rollouts(3)
			retry := rollbackOf(all[0], fleetv1alpha1.RolloutSucceeded)
			retry.Name, retry.CreationTimestamp = RollbackAttemptName(all[0].Name, 2), metav1.NewTime(retry.CreationTimestamp.Add(time.Second))
			return append(all, rollbackOf(all[0], fleetv1alpha1.RolloutAborted), retry)
		}, limit: 2, want: []string{"r01", "r01-rb", "r01-rb2"}},
		{name: "an orphaned finished rollback older than the kept ones goes", all: func() []*fleetv1alpha1.FleetRollout {
			all := rollouts(3)
			rb := rollbackOf(all[0], fleetv1alpha1.RolloutFailed)
			return append(all[1:], rb)
		}, limit: 2, want: []string{"r01-rb"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, names(Expired(tc.all(), tc.limit)))
		})
	}
}

func TestAppendHistory(t *testing.T) {
	t.Parallel()
	ro := func(name string) *fleetv1alpha1.FleetRollout {
		return &fleetv1alpha1.FleetRollout{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: fleetv1alpha1.FleetRolloutSpec{Freight: fleetv1alpha1.FreightReference{Name: "f-" + name},
				Direction: fleetv1alpha1.DirectionForward, Actor: "kubernetes:alice"},
			Status: fleetv1alpha1.FleetRolloutStatus{Phase: fleetv1alpha1.RolloutSucceeded}}
	}
	names := func(h []fleetv1alpha1.RolloutRecord) []string {
		out := []string{}
		for _, r := range h {
			out = append(out, r.Name)
		}
		return out
	}
	tests := []struct {
		name     string
		history  []string
		rollouts []string
		want     []string
	}{
		{name: "first records", rollouts: []string{"a", "b"}, want: []string{"a", "b"}},
		{name: "recorded once", history: []string{"a"}, rollouts: []string{"a", "b"}, want: []string{"a", "b"}},
		{name: "newest twenty kept", history: []string{"h00", "h01", "h02", "h03", "h04", "h05", "h06", "h07", "h08", "h09",
			"h10", "h11", "h12", "h13", "h14", "h15", "h16", "h17", "h18", "h19"}, rollouts: []string{"a"},
			want: []string{"h01", "h02", "h03", "h04", "h05", "h06", "h07", "h08", "h09", "h10", "h11", "h12", "h13", "h14",
				"h15", "h16", "h17", "h18", "h19", "a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var history []fleetv1alpha1.RolloutRecord
			for _, n := range tt.history {
				history = append(history, Record(ro(n)))
			}
			var rollouts []*fleetv1alpha1.FleetRollout
			for _, n := range tt.rollouts {
				rollouts = append(rollouts, ro(n))
			}
			got := AppendHistory(history, rollouts)
			require.Equal(t, tt.want, names(got))
			require.Equal(t, "kubernetes:alice", got[len(got)-1].Actor)
			require.Equal(t, fleetv1alpha1.RolloutSucceeded, got[len(got)-1].Phase)
		})
	}
}

func TestCompare(t *testing.T) {
	t.Parallel()
	second := metav1.NewTime(time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC))
	at := func(name string, created metav1.Time, requested string) *fleetv1alpha1.FleetRollout {
		ro := &fleetv1alpha1.FleetRollout{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: created}}
		if requested != "" {
			ro.Annotations = map[string]string{fleetv1alpha1.RequestedAtAnnotation: requested}
		}
		return ro
	}
	rollback := at("z-rb", second, "2026-01-01T09:00:00Z")
	rollback.Spec.RollbackOf = "a"
	for _, tt := range []struct {
		name  string
		older *fleetv1alpha1.FleetRollout
		newer *fleetv1alpha1.FleetRollout
	}{
		{"the creation second decides first, whatever the annotation says",
			at("b", second, "2026-01-01T10:00:05Z"), at("a", metav1.NewTime(second.Add(time.Second)), "2026-01-01T10:00:00Z")},
		{"within one second the request time decides, not the name",
			at("z", second, "2026-01-01T10:00:00.100Z"), at("a", second, "2026-01-01T10:00:00.200Z")},
		{"without request times the name breaks the tie",
			at("a", second, ""), at("b", second, "")},
		{"a malformed request time is ignored",
			at("a", second, "soon"), at("b", second, "2026-01-01T10:00:00Z")},
		{"a rollback comes after the rollout it undoes",
			at("a", second, "2026-01-01T10:00:00.9Z"), rollback},
	} {
		t.Run(tt.name, func(t *testing.T) {
			require.Negative(t, Compare(tt.older, tt.newer))
			require.Positive(t, Compare(tt.newer, tt.older))
		})
	}
	ro := NewForward(Forward{Namespace: "shop", FleetStage: "prod", Freight: fleetv1alpha1.FreightReference{Name: "f1"}, Promotion: "p"})
	_, err := time.Parse(time.RFC3339Nano, ro.Annotations[fleetv1alpha1.RequestedAtAnnotation])
	require.NoError(t, err, "every rollout records when it was requested")
}
