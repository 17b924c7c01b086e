package kargosim

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// ListProjectEvents lists a Project's Events as Kargo's API server answers
// its UI's Events page (Kargo v1.11.2 ListProjectEvents,
// pkg/server/list_project_events_v1alpha1.go): the core/v1 Events of the
// Project's namespace whose involvedObject is in the kargo.akuity.io API
// group, newest lastTimestamp first. Kargo selects them through a field
// index on that group; this reads the namespace's Events and filters them
// alike. An Event with no lastTimestamp (an events.k8s.io Event read as
// core/v1) sorts last, as it does in Kargo, and the page shows its
// timestamps as "Unknown".
func ListProjectEvents(ctx context.Context, c client.Reader, project string) ([]corev1.Event, error) {
	list := &corev1.EventList{}
	if err := c.List(ctx, list, client.InNamespace(project)); err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	out := slices.DeleteFunc(list.Items, func(e corev1.Event) bool { return involvedGroup(&e) != kargo.GroupVersion.Group })
	slices.SortStableFunc(out, func(a, b corev1.Event) int {
		return b.LastTimestamp.Compare(a.LastTimestamp.Time)
	})
	return out, nil
}

// involvedGroup is the API group of an Event's involved object; "" for the
// core group or an invalid apiVersion, which Kargo's index leaves out.
func involvedGroup(e *corev1.Event) string {
	gv, err := schema.ParseGroupVersion(e.InvolvedObject.APIVersion)
	if err != nil {
		return ""
	}
	return gv.Group
}
