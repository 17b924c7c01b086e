package fleetrollouts

import (
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

func TestPromotionJudged(t *testing.T) {
	t.Parallel()
	base := &kargo.Promotion{ObjectMeta: metav1.ObjectMeta{Name: "p", ResourceVersion: "1",
		Labels: map[string]string{fleetv1alpha1.RolloutLabel: "r"}}}
	base.Status.Phase = kargo.PromotionRunning
	for _, tt := range []struct {
		name   string
		change func(p *kargo.Promotion)
		want   bool
	}{
		{"a step's bookkeeping only", func(p *kargo.Promotion) { p.ResourceVersion = "2"; p.Status.CurrentStep = 1 }, false},
		{"phase", func(p *kargo.Promotion) { p.Status.Phase = kargo.PromotionSucceeded }, true},
		{"message", func(p *kargo.Promotion) { p.Status.Message = "step sync failed" }, true},
		{"finish time", func(p *kargo.Promotion) { p.Status.FinishedAt = &metav1.Time{} }, true},
		{"abort requested", func(p *kargo.Promotion) { p.Annotations = map[string]string{kargo.AbortAnnotation: "x"} }, true},
		{"label", func(p *kargo.Promotion) { p.Labels = map[string]string{} }, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			n := base.DeepCopy()
			tt.change(n)
			require.Equal(t, tt.want, promotionJudged.Update(event.UpdateEvent{ObjectOld: base, ObjectNew: n}))
		})
	}
	require.True(t, promotionJudged.Create(event.CreateEvent{Object: base}))
	require.True(t, promotionJudged.Delete(event.DeleteEvent{Object: base}))
}

func TestTargetStageJudged(t *testing.T) {
	t.Parallel()
	base := &kargo.Stage{ObjectMeta: metav1.ObjectMeta{Name: "fleet.t-1", ResourceVersion: "1",
		Labels: map[string]string{fleetv1alpha1.RoleLabel: fleetv1alpha1.RoleTarget}}}
	base.Status.Health = &kargo.Health{Status: kargo.HealthHealthy}
	base.Status.FreightHistory = []kargo.FreightCollection{{ID: "c1",
		Items:               map[string]kargo.FreightReference{"Warehouse/apps": {Name: "f1"}},
		VerificationHistory: []kargo.VerificationInfo{{Phase: kargo.VerificationRunning}}}}
	for _, tt := range []struct {
		name   string
		change func(s *kargo.Stage)
		want   bool
	}{
		{"Kargo's bookkeeping only", func(s *kargo.Stage) {
			s.ResourceVersion = "2"
			s.Status.ObservedGeneration = 7
			s.Status.LastHandledRefresh = "now"
		}, false},
		{"health", func(s *kargo.Stage) { s.Status.Health.Status = kargo.HealthUnhealthy }, true},
		{"Freight", func(s *kargo.Stage) {
			s.Status.FreightHistory = append([]kargo.FreightCollection{{ID: "c2",
				Items: map[string]kargo.FreightReference{"Warehouse/apps": {Name: "f2"}}}}, s.Status.FreightHistory...)
		}, true},
		{"verification", func(s *kargo.Stage) {
			s.Status.FreightHistory[0].VerificationHistory[0].Phase = kargo.VerificationSuccessful
		}, true},
		{"prune mark", func(s *kargo.Stage) { s.Annotations = map[string]string{fleetv1alpha1.PruneAnnotation: "x"} }, true},
		{"another annotation", func(s *kargo.Stage) { s.Annotations = map[string]string{"kargo.akuity.io/refresh": "x"} }, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			n := base.DeepCopy()
			tt.change(n)
			require.Equal(t, tt.want, targetStageJudged.Update(event.UpdateEvent{ObjectOld: base, ObjectNew: n}))
		})
	}
	wave := base.DeepCopy()
	wave.Labels[fleetv1alpha1.RoleLabel] = fleetv1alpha1.RoleWave
	require.False(t, targetStageJudged.Create(event.CreateEvent{Object: wave}), "target Stages only")
	require.True(t, targetStageJudged.Create(event.CreateEvent{Object: base}))
}
