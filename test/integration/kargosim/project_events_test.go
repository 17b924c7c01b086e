//go:build integration

package kargosim_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/kargosim"
)

// TestListProjectEvents: Kargo's Events page lists only Events about
// objects of the kargo.akuity.io group, newest first; an events.k8s.io
// Event about a Stage is listed, but without the timestamps the page shows,
// at the bottom.
func TestListProjectEvents(t *testing.T) {
	ctx := context.Background()
	ns := newProject(t)
	at := time.Now().Truncate(time.Second)
	core := func(name, apiVersion, kind string, last time.Time) {
		require.NoError(t, k8s.Create(ctx, &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Namespace: ns, Name: name},
			InvolvedObject: corev1.ObjectReference{APIVersion: apiVersion, Kind: kind, Namespace: ns, Name: "x"},
			Reason:         "R", Message: name, Type: corev1.EventTypeNormal, Count: 1,
			FirstTimestamp: metav1.NewTime(last), LastTimestamp: metav1.NewTime(last),
			Source: corev1.EventSource{Component: "test"},
		}))
	}
	core("stage-older", kargo.GroupVersion.String(), "Stage", at.Add(-time.Minute))
	core("freight-newer", kargo.GroupVersion.String(), "Freight", at)
	core("fleetrollout", "fleet.kargo-fleet.io/v1alpha1", "FleetRollout", at)
	core("pod", "v1", "Pod", at)
	require.NoError(t, k8s.Create(ctx, &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "stage-events-k8s-io"},
		EventTime:  metav1.NewMicroTime(at), ReportingController: "test", ReportingInstance: "test-1",
		Action: "Reconcile", Reason: "R", Note: "stage-events-k8s-io", Type: corev1.EventTypeNormal,
		Regarding: corev1.ObjectReference{APIVersion: kargo.GroupVersion.String(), Kind: "Stage", Namespace: ns, Name: "x"},
	}))

	got, err := kargosim.ListProjectEvents(ctx, k8s, ns)
	require.NoError(t, err)
	var names []string
	for _, e := range got {
		names = append(names, e.Name)
	}
	require.Equal(t, []string{"freight-newer", "stage-older", "stage-events-k8s-io"}, names)
	last := got[2]
	require.True(t, last.LastTimestamp.IsZero(), "an events.k8s.io Event has no lastTimestamp: the page shows Unknown")
	require.True(t, last.FirstTimestamp.IsZero())
}
