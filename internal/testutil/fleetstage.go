// Package testutil is the shared test kit: fluent builders of kargo-fleet
// and Kargo objects (MakeFleetStage, MakeStage, MakeFreight, MakePromotion,
// each ending in Obj), Create, and Await, which polls an object through a
// client until a condition holds. Unit tests use it with fake clients,
// integration suites with the envtest client.
package testutil

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

// FleetStageWrapper builds a FleetStage for tests.
type FleetStageWrapper struct{ fleetv1alpha1.FleetStage }

// MakeFleetStage returns a valid FleetStage adopting Stage "prod", with one
// inline target source and a single catch-all wave named "all".
func MakeFleetStage(namespace, name string) *FleetStageWrapper {
	return &FleetStageWrapper{fleetv1alpha1.FleetStage{
		TypeMeta:   metav1.TypeMeta{APIVersion: fleetv1alpha1.GroupVersion.String(), Kind: "FleetStage"},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: fleetv1alpha1.FleetStageSpec{
			Stage: fleetv1alpha1.StageSource{FromStage: "prod"},
			Targets: fleetv1alpha1.TargetsSpec{Sources: []fleetv1alpha1.TargetSource{{
				Kind:   fleetv1alpha1.InlineSource,
				Inline: []fleetv1alpha1.InlineTarget{{Name: "c1"}},
			}}},
			Waves: []fleetv1alpha1.Wave{{Name: "all"}},
		},
	}}
}

// Obj returns the built object.
func (w *FleetStageWrapper) Obj() *fleetv1alpha1.FleetStage { return w.DeepCopy() }

// FromStage adopts the named Stage.
func (w *FleetStageWrapper) FromStage(name string) *FleetStageWrapper {
	w.Spec.Stage = fleetv1alpha1.StageSource{FromStage: name}
	return w
}

// InlineStage uses an inline Stage spec taking Freight directly from a
// Warehouse, with the given promotion template (JSON).
func (w *FleetStageWrapper) InlineStage(warehouse, promotionTemplateJSON string) *FleetStageWrapper {
	w.Spec.Stage = fleetv1alpha1.StageSource{Inline: &fleetv1alpha1.InlineStageSpec{
		RequestedFreight: []fleetv1alpha1.RequestedFreight{{
			Origin:  fleetv1alpha1.FreightOrigin{Kind: "Warehouse", Name: warehouse},
			Sources: fleetv1alpha1.FreightSources{Direct: true},
		}},
		PromotionTemplate: runtime.RawExtension{Raw: []byte(promotionTemplateJSON)},
	}}
	return w
}

// Waves replaces the waves.
func (w *FleetStageWrapper) Waves(waves ...fleetv1alpha1.Wave) *FleetStageWrapper {
	w.Spec.Waves = waves
	return w
}

// InlineTargets replaces the sources with one inline source.
func (w *FleetStageWrapper) InlineTargets(targets ...fleetv1alpha1.InlineTarget) *FleetStageWrapper {
	w.Spec.Targets.Sources = []fleetv1alpha1.TargetSource{{Kind: fleetv1alpha1.InlineSource, Inline: targets}}
	return w
}

// Policy replaces the fleet policy.
func (w *FleetStageWrapper) Policy(p fleetv1alpha1.FleetPolicy) *FleetStageWrapper {
	w.Spec.Policy = p
	return w
}

// Int returns an IntOrString holding n.
func Int(n int) *intstr.IntOrString { v := intstr.FromInt32(int32(n)); return &v }

// Percent returns an IntOrString holding "p%".
func Percent(p string) *intstr.IntOrString { v := intstr.FromString(p); return &v }
