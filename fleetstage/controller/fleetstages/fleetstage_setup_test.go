package fleetstages

import (
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

func TestStageChangedPredicate(t *testing.T) {
	t.Parallel()
	stage := func(generation int64, labels, annotations map[string]string) *kargo.Stage {
		return &kargo.Stage{ObjectMeta: metav1.ObjectMeta{Name: "prod-canary", Generation: generation, Labels: labels, Annotations: annotations}}
	}
	desc := kargo.DescriptionAnnotation
	tests := []struct {
		name     string
		old, new *kargo.Stage
		want     bool
	}{
		{name: "nothing changed", old: stage(1, nil, nil), new: stage(1, nil, nil), want: false},
		{name: "spec alone: the per-Stage restore's", old: stage(1, nil, nil), new: stage(2, nil, nil), want: false},
		{name: "label", old: stage(1, nil, nil), new: stage(1, map[string]string{"a": "b"}, nil), want: true},
		{name: "description set", old: stage(1, nil, nil), new: stage(1, nil, map[string]string{desc: "wave canary: 3 of 50"}), want: false},
		{name: "description rewritten", old: stage(1, nil, map[string]string{desc: "x", "k": "v"}),
			new: stage(1, nil, map[string]string{desc: "y", "k": "v"}), want: false},
		{name: "description removed", old: stage(1, nil, map[string]string{desc: "x"}), new: stage(1, nil, nil), want: false},
		{name: "another annotation added", old: stage(1, nil, map[string]string{desc: "x"}),
			new: stage(1, nil, map[string]string{desc: "x", "k": "v"}), want: true},
		{name: "another annotation removed", old: stage(1, nil, map[string]string{desc: "x", "k": "v"}),
			new: stage(1, nil, map[string]string{desc: "y"}), want: true},
		{name: "another annotation changed with the description", old: stage(1, nil, map[string]string{desc: "x", "k": "v"}),
			new: stage(1, nil, map[string]string{desc: "y", "k": "w"}), want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, stageChangedPredicate().Update(event.UpdateEvent{ObjectOld: tt.old, ObjectNew: tt.new}))
		})
	}
	require.True(t, stageChangedPredicate().Create(event.CreateEvent{Object: stage(1, nil, nil)}))
	require.True(t, stageChangedPredicate().Delete(event.DeleteEvent{Object: stage(1, nil, nil)}))
	generated := map[string]string{fleetv1alpha1.FleetStageLabel: "prod"}
	require.True(t, stageSpecChangedPredicate().Update(event.UpdateEvent{ObjectOld: stage(1, generated, nil), ObjectNew: stage(2, generated, nil)}),
		"a generated Stage's spec change goes to the per-Stage restore")
	require.False(t, stageSpecChangedPredicate().Update(event.UpdateEvent{ObjectOld: stage(1, generated, nil),
		ObjectNew: stage(1, generated, map[string]string{kargo.DescriptionAnnotation: "x"})}))
}
