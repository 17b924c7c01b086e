package kargosim

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

func TestFreightStatusWriterQueue(t *testing.T) {
	t.Parallel()
	fr := &kargo.Freight{ObjectMeta: metav1.ObjectMeta{Namespace: "p", Name: "f1"}}
	key := types.NamespacedName{Namespace: "p", Name: "f1"}
	tests := []struct {
		name  string
		queue func(w *freightStatusWriter)
		want  map[string]map[string]map[string]any
	}{
		{
			name: "entries of many Stages share one patch",
			queue: func(w *freightStatusWriter) {
				w.set(fr, fieldCurrentlyIn, "a", map[string]any{"since": "t1"})
				w.set(fr, fieldCurrentlyIn, "b", map[string]any{"since": "t2"})
				w.set(fr, fieldVerifiedIn, "a", map[string]any{"verifiedAt": "t3"})
			},
			want: map[string]map[string]map[string]any{
				fieldCurrentlyIn: {"a": {"since": "t1"}, "b": {"since": "t2"}},
				fieldVerifiedIn:  {"a": {"verifiedAt": "t3"}},
			},
		},
		{
			name: "fields of one entry merge",
			queue: func(w *freightStatusWriter) {
				w.set(fr, fieldVerifiedIn, "a", map[string]any{"verifiedAt": "t1"})
				w.set(fr, fieldVerifiedIn, "a", map[string]any{"longestSoak": "1h"})
			},
			want: map[string]map[string]map[string]any{
				fieldVerifiedIn: {"a": {"verifiedAt": "t1", "longestSoak": "1h"}},
			},
		},
		{
			name: "the last word wins: removal after an entry",
			queue: func(w *freightStatusWriter) {
				w.set(fr, fieldCurrentlyIn, "a", map[string]any{"since": "t1"})
				w.leave(fr, "a")
			},
			want: map[string]map[string]map[string]any{fieldCurrentlyIn: {"a": nil}},
		},
		{
			name: "the last word wins: an entry after a removal starts afresh",
			queue: func(w *freightStatusWriter) {
				w.set(fr, fieldCurrentlyIn, "a", map[string]any{"since": "t1", "other": "x"})
				w.leave(fr, "a")
				w.set(fr, fieldCurrentlyIn, "a", map[string]any{"since": "t2"})
			},
			want: map[string]map[string]map[string]any{fieldCurrentlyIn: {"a": {"since": "t2"}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := newFreightStatusWriter(nil, 0)
			tt.queue(w)
			require.Equal(t, tt.want, w.pending[key])
			require.Len(t, w.wake, 1, "queueing wakes the flush loop once")
		})
	}
}

func TestFreightStatusWriterRequeue(t *testing.T) {
	t.Parallel()
	fr := &kargo.Freight{ObjectMeta: metav1.ObjectMeta{Namespace: "p", Name: "f1"}}
	key := types.NamespacedName{Namespace: "p", Name: "f1"}
	w := newFreightStatusWriter(nil, 0)
	failed := map[string]map[string]map[string]any{
		fieldCurrentlyIn: {"a": {"since": "t1"}, "b": {"since": "t1"}},
		fieldVerifiedIn:  {"a": {"verifiedAt": "t1"}},
	}
	// Queued while the failed patch was in flight.
	w.leave(fr, "a")
	w.set(fr, fieldVerifiedIn, "a", map[string]any{"longestSoak": "1h"})
	w.requeue(key, failed)
	require.Equal(t, map[string]map[string]map[string]any{
		fieldCurrentlyIn: {"a": nil, "b": {"since": "t1"}},
		fieldVerifiedIn:  {"a": {"verifiedAt": "t1", "longestSoak": "1h"}},
	}, w.pending[key])
}

func TestChangedStageEntries(t *testing.T) {
	t.Parallel()
	at := func(s int64) *metav1.Time { return &metav1.Time{Time: metav1.Unix(s, 0).Time} }
	base := func() *kargo.Freight {
		return &kargo.Freight{
			ObjectMeta: metav1.ObjectMeta{Name: "f1", Generation: 1, Labels: map[string]string{"l": "v"}},
			Alias:      "calm-fox",
			Status: kargo.FreightStatus{
				VerifiedIn:  map[string]kargo.VerifiedStage{"a": {VerifiedAt: at(1)}},
				CurrentlyIn: map[string]kargo.CurrentStage{"a": {Since: at(1)}, "b": {Since: at(1)}},
			},
		}
	}
	tests := []struct {
		name       string
		change     func(*kargo.Freight)
		onlyStages bool
		stages     []string
	}{
		{name: "nothing", change: func(*kargo.Freight) {}, onlyStages: true},
		{name: "an entry added", onlyStages: true, stages: []string{"c"},
			change: func(f *kargo.Freight) { f.Status.VerifiedIn["c"] = kargo.VerifiedStage{VerifiedAt: at(2)} }},
		{name: "an entry removed", onlyStages: true, stages: []string{"b"},
			change: func(f *kargo.Freight) { delete(f.Status.CurrentlyIn, "b") }},
		{name: "an entry changed", onlyStages: true, stages: []string{"a"},
			change: func(f *kargo.Freight) {
				f.Status.VerifiedIn["a"] = kargo.VerifiedStage{VerifiedAt: at(1), LongestSoak: &metav1.Duration{}}
			}},
		{name: "an approval", onlyStages: true, stages: []string{"d"},
			change: func(f *kargo.Freight) {
				f.Status.ApprovedFor = map[string]kargo.ApprovedStage{"d": {ApprovedAt: at(3)}}
			}},
		{name: "a label", change: func(f *kargo.Freight) { f.Labels["l"] = "w" }},
		{name: "the alias", change: func(f *kargo.Freight) { f.Alias = "other" }},
		{name: "the generation", change: func(f *kargo.Freight) { f.Generation++ }},
		{name: "deletion", change: func(f *kargo.Freight) { f.DeletionTimestamp = at(4) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			old, cur := base(), base()
			tt.change(cur)
			require.Equal(t, tt.onlyStages, onlyStageEntriesDiffer(old, cur))
			got := changedStageEntries(old, cur)
			slices.Sort(got)
			require.Equal(t, tt.stages, got)
		})
	}
}
