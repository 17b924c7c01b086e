package fleetrollouts

import (
	"maps"
	"reflect"
	"slices"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// Kargo patches a target Stage about eight times and a Promotion about three
// times per target Promotion, and writes the Freight's verifiedIn and
// currentlyIn once per Stage. The predicates below let through only the
// changes a rollout's judgement reads (observe): an event that cannot change
// a decision does not reconcile every open rollout of the fleet. No decision
// waits for a filtered event.

// promotionJudged passes a Promotion's creation and deletion, and an update
// that changes what observe reads: phase, message, finish time, labels or
// annotations (an abort request, a refresh).
var promotionJudged = updatedWhen(promotionChanged)

// updatedWhen passes creations and deletions, and updates for which changed
// says yes (or whose objects are not of type T).
func updatedWhen[T client.Object](changed func(old, updated T) bool) predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(T)
		n, ok2 := e.ObjectNew.(T)
		return !ok1 || !ok2 || changed(o, n)
	}}
}

func promotionChanged(o, n *kargo.Promotion) bool {
	return o.Status.Phase != n.Status.Phase || o.Status.Message != n.Status.Message ||
		!reflect.DeepEqual(o.Status.FinishedAt, n.Status.FinishedAt) ||
		!maps.Equal(o.Labels, n.Labels) || !maps.Equal(o.Annotations, n.Annotations) ||
		!reflect.DeepEqual(o.DeletionTimestamp, n.DeletionTimestamp)
}

// targetStageJudged passes target Stages only: their creation and deletion,
// and an update that changes what observe reads: labels, the prune mark,
// health, the Freight the Stage runs and its latest verification.
var targetStageJudged = predicate.And(
	predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetLabels()[fleetv1alpha1.RoleLabel] == fleetv1alpha1.RoleTarget
	}),
	updatedWhen(targetStageChanged),
)

func targetStageChanged(o, n *kargo.Stage) bool {
	return !maps.Equal(o.Labels, n.Labels) ||
		o.Annotations[fleetv1alpha1.PruneAnnotation] != n.Annotations[fleetv1alpha1.PruneAnnotation] ||
		healthOf(o) != healthOf(n) ||
		!slices.Equal(o.CurrentFreightNames(), n.CurrentFreightNames()) ||
		verificationOf(o) != verificationOf(n) ||
		!reflect.DeepEqual(o.DeletionTimestamp, n.DeletionTimestamp)
}

func healthOf(s *kargo.Stage) string {
	if s.Status.Health == nil {
		return ""
	}
	return s.Status.Health.Status
}

func verificationOf(s *kargo.Stage) string {
	if v := s.LastVerification(); v != nil {
		return v.Phase
	}
	return ""
}

// notAuditHeadOnly drops FleetStage updates that only record the audit
// trail's newest record: the audit writer makes one after each batch of
// decisions, and none of them changes what a rollout decides.
var notAuditHeadOnly = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	old, okOld := e.ObjectOld.(*fleetv1alpha1.FleetStage)
	updated, okNew := e.ObjectNew.(*fleetv1alpha1.FleetStage)
	return !okOld || !okNew || !fleetv1alpha1.OnlyAuditHeadChanged(old, updated)
}}
