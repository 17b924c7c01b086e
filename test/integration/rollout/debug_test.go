//go:build integration

package rollout_test

import (
	"context"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// dumpPromotions logs every Promotion of the Project when the test failed.
func dumpPromotions(t *testing.T, ns string) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		list := &kargo.PromotionList{}
		if err := env.Client.List(context.Background(), list, client.InNamespace(ns)); err != nil {
			return
		}
		for _, p := range list.Items {
			t.Logf("promotion %s stage=%s freight=%s phase=%s msg=%q labels=%v", p.Name, p.Spec.Stage, p.Spec.Freight, p.Status.Phase, p.Status.Message, p.Labels)
		}
		rollouts := &fleetv1alpha1.FleetRolloutList{}
		if err := env.Client.List(context.Background(), rollouts, client.InNamespace(ns)); err != nil {
			return
		}
		for _, ro := range rollouts.Items {
			t.Logf("rollout %s freight=%s dir=%s phase=%s msg=%q annotations=%v waves=%+v", ro.Name, ro.Spec.Freight.Name, ro.Spec.Direction,
				ro.Status.Phase, ro.Status.Message, ro.Annotations, ro.Status.Waves)
		}
	})
}
