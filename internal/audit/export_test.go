package audit

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

func entries() []Entry {
	rs := records(0, 6)
	rs[1].Actor, rs[1].Action = "email:alice@example.com", "ApprovalGiven"
	rs[2].Identity, rs[2].Action = "system:serviceaccount:kargo:kargo-api", "PromotionRefused"
	rs[3].Stage = "prod.eu-west-01"
	rs[4].Freight = "f3"
	rs[5].Message = "=HYPERLINK(\"http://evil\")"
	Chain(Head{}, rs)
	w := PlanAppend("p1", "prod", nil, "", rs)
	return Entries([]fleetv1alpha1.FleetAuditSegment{*w.Create[0]})
}

func sequences(t *testing.T, f Filter) []int64 {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, WriteJSONLines(&buf, entries(), &f))
	var out []int64
	dec := json.NewDecoder(&buf)
	for dec.More() {
		var e Entry
		require.NoError(t, dec.Decode(&e))
		require.Equal(t, "p1", e.Namespace)
		require.Equal(t, "prod", e.FleetStage)
		require.Len(t, e.Hash, 64)
		out = append(out, e.Sequence)
	}
	return out
}

func TestFilters(t *testing.T) {
	require.Equal(t, []int64{1, 2, 3, 4, 5, 6}, sequences(t, Filter{}))
	require.Equal(t, []int64{3, 4}, sequences(t, Filter{Since: t0.Add(2 * time.Second), Until: t0.Add(4 * time.Second)}))
	require.Equal(t, []int64{2}, sequences(t, Filter{Actor: "ALICE"}))
	require.Equal(t, []int64{3}, sequences(t, Filter{Actor: "kargo-api"}))
	require.Equal(t, []int64{4}, sequences(t, Filter{Target: "eu-west-01"}))
	require.Equal(t, []int64{4}, sequences(t, Filter{Target: "prod.eu-west-01"}))
	require.Equal(t, []int64{5}, sequences(t, Filter{Freight: "f3"}))
	require.Empty(t, sequences(t, Filter{FleetStage: "staging"}))
}

func TestCSVKeepsFormulasOut(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, WriteCSV(&buf, entries(), &Filter{}))
	rows, err := csv.NewReader(&buf).ReadAll()
	require.NoError(t, err)
	require.Len(t, rows, 7)
	require.Equal(t, CSVHeader, rows[0])
	require.Equal(t, "email:alice@example.com", rows[2][6])
	require.Equal(t, "'=HYPERLINK(\"http://evil\")", rows[6][12])
	require.Equal(t, "2026-12-03T10:00:05Z", rows[6][3])
}

func TestFromEvent(t *testing.T) {
	now := metav1.NewMicroTime(t0)
	ro := &fleetv1alpha1.FleetRollout{
		ObjectMeta: metav1.ObjectMeta{Namespace: "p1", Name: "prod-f2", Annotations: map[string]string{
			fleetv1alpha1.IntentActorAnnotation: "kubernetes:bob",
			fleetv1alpha1.StepKeyAnnotation:     "prod-canary.01abc/fleet-wave",
		}},
		Spec:   fleetv1alpha1.FleetRolloutSpec{FleetStage: "prod", Freight: fleetv1alpha1.FreightReference{Name: "f2"}, Actor: "email:alice@example.com"},
		Status: fleetv1alpha1.FleetRolloutStatus{Waves: []fleetv1alpha1.WaveProgress{{Name: "canary"}}},
	}
	canary := &corev1.ObjectReference{APIVersion: "kargo.akuity.io/v1alpha1", Kind: "Stage", Namespace: "p1", Name: "prod-canary"}

	e, ok := FromEvent(ro, nil, "Normal", "SnapshotTaken", "Took the plan snapshot", now)
	require.True(t, ok)
	require.Equal(t, RolloutStartedAction, e.Action)
	require.Equal(t, "email:alice@example.com", e.Actor)
	require.Equal(t, "Took the plan snapshot; asked through Kargo Promotion prod-canary.01abc", e.Message)
	require.Equal(t, "f2", e.Freight)

	e, ok = FromEvent(ro, canary, "Normal", "RolloutPaused", "Paused", now)
	require.True(t, ok)
	require.Equal(t, "kubernetes:bob", e.Actor)
	require.Equal(t, "canary", e.Wave)
	require.Equal(t, "prod-canary", e.Stage)

	e, ok = FromEvent(ro, canary, "Warning", "ThresholdBreached", "Threshold breached", now)
	require.True(t, ok)
	require.Equal(t, ControllerActor, e.Actor)

	fs := &fleetv1alpha1.FleetStage{ObjectMeta: metav1.ObjectMeta{Namespace: "p1", Name: "prod"}}
	e, ok = FromEvent(fs, &corev1.ObjectReference{Kind: "Stage", Name: "prod.eu-01"}, "Warning", "DriftDetected", "drifted", now)
	require.True(t, ok)
	require.Equal(t, Entry{Namespace: "p1", FleetStage: "prod", AuditRecord: fleetv1alpha1.AuditRecord{
		Time: now, Action: "DriftDetected", Type: "Warning", Actor: ControllerActor, Stage: "prod.eu-01", Message: "drifted"}}, e)

	_, ok = FromEvent(&corev1.Pod{}, nil, "Normal", "X", "y", now)
	require.False(t, ok)
	require.True(t, strings.HasPrefix(pathOf(&fleetv1alpha1.FleetRollout{}), "asked through the FleetRollout API"))

	// An automatic rollback: the forward rollout's RollbackStarted is the
	// controller's decision; the rollback's own names its actor.
	e, ok = FromEvent(ro, canary, "Warning", "RollbackStarted", "Rolling back, as spec.policy.rollback.mode Automatic says", now)
	require.True(t, ok)
	require.Equal(t, ControllerActor, e.Actor)
	rb := &fleetv1alpha1.FleetRollout{ObjectMeta: metav1.ObjectMeta{Namespace: "p1", Name: "prod-f2-rb"},
		Spec: fleetv1alpha1.FleetRolloutSpec{FleetStage: "prod", Freight: fleetv1alpha1.FreightReference{Name: "f1"},
			Direction: fleetv1alpha1.DirectionRollback, RollbackOf: "prod-f2", Actor: "kargo-fleet: spec.policy.rollback.mode Automatic"}}
	e, ok = FromEvent(rb, nil, "Warning", "RollbackStarted", "Rolling back 16 target(s)", now)
	require.True(t, ok)
	require.Equal(t, "kargo-fleet: spec.policy.rollback.mode Automatic", e.Actor)
	e, ok = FromEvent(rb, nil, "Normal", "SnapshotTaken", "Took the plan snapshot", now)
	require.True(t, ok)
	require.Equal(t, "Took the plan snapshot; decided by the controller", e.Message)
}
