package testutil

import (
	"fmt"
	"maps"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// Warehouse is the origin of the Freight the builders make: Warehouse
// "apps".
var Warehouse = kargo.FreightOrigin{Kind: kargo.OriginKindWarehouse, Name: "apps"}

// StageWrapper builds a Kargo Stage for tests.
type StageWrapper struct{ kargo.Stage }

// MakeStage returns a Stage requesting Freight from Warehouse directly, with
// no vars and no promotion template.
func MakeStage(namespace, name string) *StageWrapper {
	return &StageWrapper{kargo.Stage{
		TypeMeta:   metav1.TypeMeta{APIVersion: kargo.GroupVersion.String(), Kind: "Stage"},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: kargo.StageSpec{RequestedFreight: []kargo.FreightRequest{{
			Origin: Warehouse, Sources: kargo.FreightSources{Direct: true},
		}}},
	}}
}

// Obj returns the built object.
func (w *StageWrapper) Obj() *kargo.Stage { return w.DeepCopy() }

// Labels adds labels.
func (w *StageWrapper) Labels(labels map[string]string) *StageWrapper {
	w.Stage.Labels = merged(w.Stage.Labels, labels)
	return w
}

// Annotations adds annotations.
func (w *StageWrapper) Annotations(annotations map[string]string) *StageWrapper {
	w.Stage.Annotations = merged(w.Stage.Annotations, annotations)
	return w
}

// Target labels the Stage as the target Stage of target id of a FleetStage,
// in wave unless it is empty, as the FleetStage controller does.
func (w *StageWrapper) Target(fleetStage, wave, id string) *StageWrapper {
	w.Labels(map[string]string{fleetv1alpha1.FleetStageLabel: fleetStage,
		fleetv1alpha1.RoleLabel: fleetv1alpha1.RoleTarget, fleetv1alpha1.TargetLabel: id})
	if wave != "" {
		w.Labels(map[string]string{fleetv1alpha1.WaveLabel: wave})
	}
	return w
}

// Wave labels the Stage as the wave Stage of a FleetStage.
func (w *StageWrapper) Wave(fleetStage string) *StageWrapper {
	return w.Labels(map[string]string{fleetv1alpha1.FleetStageLabel: fleetStage,
		fleetv1alpha1.RoleLabel: fleetv1alpha1.RoleWave})
}

// Upstream makes the Stage take Freight from the given Stages instead of
// directly from the Warehouse.
func (w *StageWrapper) Upstream(stages ...string) *StageWrapper {
	w.Spec.RequestedFreight[0].Sources.Direct = false
	w.Spec.RequestedFreight[0].Sources.Stages = stages
	return w
}

// Soak requires Freight to have soaked upstream for d.
func (w *StageWrapper) Soak(d time.Duration) *StageWrapper {
	w.Spec.RequestedFreight[0].Sources.RequiredSoakTime = &metav1.Duration{Duration: d}
	return w
}

// Vars appends Stage variables given as name, value pairs.
func (w *StageWrapper) Vars(nameValues ...string) *StageWrapper {
	for i := 0; i+1 < len(nameValues); i += 2 {
		w.Spec.Vars = append(w.Spec.Vars, kargo.ExpressionVariable{Name: nameValues[i], Value: nameValues[i+1]})
	}
	return w
}

// Steps sets the promotion template's steps.
func (w *StageWrapper) Steps(steps ...kargo.PromotionStep) *StageWrapper {
	w.Spec.PromotionTemplate = &kargo.PromotionTemplate{Spec: kargo.PromotionTemplateSpec{Steps: steps}}
	return w
}

// ArgoCDUpdate sets one argocd-update step (alias "sync") updating the Argo
// CD Application app, which may hold Kargo expressions.
func (w *StageWrapper) ArgoCDUpdate(app string) *StageWrapper {
	return w.Steps(ArgoCDUpdateStep(`{"apps":[{"name":"` + app + `"}]}`))
}

// Current records freight as the Stage's current Freight (freight history
// entry 0), as Kargo does after a Promotion.
func (w *StageWrapper) Current(freight string) *StageWrapper {
	w.Status.FreightHistory = append([]kargo.FreightCollection{{
		ID: freight, Items: map[string]kargo.FreightReference{Warehouse.Key(): {Name: freight, Origin: Warehouse}},
	}}, w.Status.FreightHistory...)
	return w
}

// ArgoCDUpdateStep returns an argocd-update step (alias "sync") with the
// given JSON config.
func ArgoCDUpdateStep(configJSON string) kargo.PromotionStep {
	return kargo.PromotionStep{Uses: "argocd-update", As: "sync", Config: JSON(configJSON)}
}

// JSON wraps raw JSON text.
func JSON(raw string) *apiextensionsv1.JSON { return &apiextensionsv1.JSON{Raw: []byte(raw)} }

// FreightWrapper builds a Kargo Freight for tests.
type FreightWrapper struct{ kargo.Freight }

// MakeFreight returns Freight from Warehouse holding one image,
// example.com/app tagged with the Freight's name.
func MakeFreight(namespace, name string) *FreightWrapper {
	return (&FreightWrapper{kargo.Freight{
		TypeMeta:   metav1.TypeMeta{APIVersion: kargo.GroupVersion.String(), Kind: "Freight"},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Origin:     Warehouse,
	}}).Image("example.com/app")
}

// Obj returns the built object.
func (w *FreightWrapper) Obj() *kargo.Freight { return w.DeepCopy() }

// Image makes the Freight's one image repoURL, tagged with the Freight's
// name.
func (w *FreightWrapper) Image(repoURL string) *FreightWrapper {
	w.Images = []apiextensionsv1.JSON{{Raw: fmt.Appendf(nil, `{"repoURL":%q,"tag":%q}`, repoURL, w.Name)}}
	return w
}

// Alias sets the Freight's alias.
func (w *FreightWrapper) Alias(alias string) *FreightWrapper {
	w.Freight.Alias = alias
	return w
}

// Origin sets the Warehouse the Freight comes from.
func (w *FreightWrapper) Origin(warehouse string) *FreightWrapper {
	w.Freight.Origin = kargo.FreightOrigin{Kind: kargo.OriginKindWarehouse, Name: warehouse}
	return w
}

// PromotionWrapper builds a Kargo Promotion for tests.
type PromotionWrapper struct{ kargo.Promotion }

// MakePromotion returns a Promotion of freight to stage, named
// <stage>.<freight> (Kargo generates names; tests need them fixed).
func MakePromotion(namespace, stage, freight string) *PromotionWrapper {
	p := kargo.NewPromotion(namespace, stage, freight, nil, nil)
	p.GenerateName, p.Name = "", stage+"."+freight
	return &PromotionWrapper{*p}
}

// Obj returns the built object.
func (w *PromotionWrapper) Obj() *kargo.Promotion { return w.DeepCopy() }

// Name sets the Promotion's name.
func (w *PromotionWrapper) Name(name string) *PromotionWrapper {
	w.Promotion.Name = name
	return w
}

// Labels adds labels.
func (w *PromotionWrapper) Labels(labels map[string]string) *PromotionWrapper {
	w.Promotion.Labels = merged(w.Promotion.Labels, labels)
	return w
}

// Steps sets the Promotion's steps, which Kargo's webhook copies from the
// Stage and a suite without that webhook sets itself.
func (w *PromotionWrapper) Steps(steps ...kargo.PromotionStep) *PromotionWrapper {
	w.Spec.Steps = steps
	return w
}

// Phase sets the Promotion's phase.
func (w *PromotionWrapper) Phase(phase kargo.PromotionPhase) *PromotionWrapper {
	w.Status.Phase = phase
	return w
}

// merged returns m with the entries of add, allocating m when it is nil.
func merged(m, add map[string]string) map[string]string {
	if m == nil {
		m = make(map[string]string, len(add))
	}
	maps.Copy(m, add)
	return m
}
