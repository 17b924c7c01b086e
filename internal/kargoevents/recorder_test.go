package kargoevents

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

func TestRecorder(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 26, 3, 0, 0, 0, time.UTC)
	fs := &fleetv1alpha1.FleetStage{}
	fs.Namespace, fs.Name = "shop", "prod"
	tests := []struct {
		name    string
		related runtime.Object
		want    *corev1.ObjectReference
	}{
		{name: "a wave Stage", related: Stage("shop", "prod-canary"), want: Stage("shop", "prod-canary")},
		{name: "a Freight", related: Freight("shop", "f3a9c81"), want: Freight("shop", "f3a9c81")},
		{name: "no related object", related: nil},
		{name: "an object of another group", related: &corev1.ObjectReference{APIVersion: "fleet.kargo-fleet.io/v1alpha1",
			Kind: "FleetRollout", Namespace: "shop", Name: "prod-v3"}},
		{name: "a Kargo object without a namespace", related: Stage("", "prod-canary")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).Build()
			inner := events.NewFakeRecorder(10)
			r := NewRecorder(inner, c, clocktesting.NewFakePassiveClock(at), "kargo-fleet-rollout")
			r.Eventf(fs, tt.related, corev1.EventTypeWarning, "ThresholdBreached", "Reconcile", "Threshold breached (%s)", "WaveThresholdBreached")
			require.Len(t, inner.Events, 1, "the kargo-fleet object's Event is recorded as before")
			list := &corev1.EventList{}
			require.NoError(t, c.List(context.Background(), list))
			if tt.want == nil {
				require.Empty(t, list.Items)
				return
			}
			require.Len(t, list.Items, 1)
			e := list.Items[0]
			require.Equal(t, *tt.want, e.InvolvedObject)
			require.Equal(t, "shop", e.Namespace)
			require.Equal(t, "ThresholdBreached", e.Reason)
			require.Equal(t, "Threshold breached (WaveThresholdBreached)", e.Message)
			require.Equal(t, corev1.EventTypeWarning, e.Type)
			require.EqualValues(t, 1, e.Count)
			require.True(t, e.FirstTimestamp.Time.Equal(at), "Kargo's Events page shows first and last seen")
			require.True(t, e.LastTimestamp.Time.Equal(at), "Kargo's Events page sorts by last seen")
			require.Equal(t, "kargo-fleet-rollout", e.Source.Component)
			require.Equal(t, "kargo-fleet-rollout", e.ReportingController)
			require.Equal(t, "shop", e.Annotations[kargo.EventProjectAnnotation])
			switch tt.want.Kind {
			case "Stage":
				require.Equal(t, tt.want.Name, e.Annotations[kargo.EventStageAnnotation])
			case "Freight":
				require.Equal(t, tt.want.Name, e.Annotations[kargo.EventFreightAnnotation])
			}
		})
	}
}
