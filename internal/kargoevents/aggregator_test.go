package kargoevents

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

func TestAggregator(t *testing.T) {
	t.Parallel()
	cs := fake.NewClientset()
	a := NewAggregator(cs.CoreV1(), clientgoscheme.Scheme, "kargo-fleet-promotion-guard")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Start(ctx) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })

	a.Eventf(&corev1.ObjectReference{APIVersion: "fleet.kargo-fleet.io/v1alpha1", Kind: "FleetStage",
		Namespace: "shop", Name: "prod"}, corev1.EventTypeWarning, "PromotionRefused", "not a Kargo object")
	start := time.Now()
	for range 50 {
		a.Eventf(Stage("shop", "prod.eu-1"), corev1.EventTypeWarning, "PromotionRefused", "Refused a Promotion of Freight %s", "f1")
	}
	require.Less(t, time.Since(start), time.Second, "recording does not wait for the writes")

	var events []corev1.Event
	require.Eventually(t, func() bool {
		list, err := cs.CoreV1().Events("shop").List(context.Background(), metav1.ListOptions{})
		require.NoError(t, err)
		events = list.Items
		return len(events) == 1 && events[0].Count == 25
	}, 10*time.Second, 20*time.Millisecond, "one Event, counted up to the burst of 25")
	e := events[0]
	require.Equal(t, *Stage("shop", "prod.eu-1"), e.InvolvedObject)
	require.Equal(t, "Refused a Promotion of Freight f1", e.Message)
	require.Equal(t, corev1.EventTypeWarning, e.Type)
	require.Equal(t, "kargo-fleet-promotion-guard", e.Source.Component)
	require.Equal(t, "shop", e.Annotations[kargo.EventProjectAnnotation])
	require.Equal(t, "prod.eu-1", e.Annotations[kargo.EventStageAnnotation])
}
