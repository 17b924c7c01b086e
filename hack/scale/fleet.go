package main

import (
	"context"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/envtest"
	"github.com/kargo-fleet/kargo-fleet/internal/inventory"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/kargosim"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
)

// Names of the scale fleet: one Project, an adopted Stage, a good and a bad
// Freight and a FleetStage.
const (
	defaultNamespace = "scale"
	fleetName        = "fleet"
	adopted          = "prod"
	goodFreight      = "f1-good"
	badFreight       = "f2-bad"
	tierLabel        = "tier"
)

// fleetShape sizes the fleet and its waves.
type fleetShape struct {
	targets           int
	criticalEvery     int // every n-th target is tier=critical
	canaryFailEvery   int // every n-th canary member breaks with the bad Freight
	canaryMaxFailures int
	generalConcurrent int
	// shards spreads the targets round-robin over this many Kargo shards
	// (shard-1 ... shard-n, each with a simulated controller); 0 leaves
	// every Stage on the default controller.
	shards int
	// namespace is the Project the fleet lives in.
	namespace string
}

// shardLabel is the target label the FleetStage reads the shard from.
const shardLabel = "kargo-shard"

// shardNames are the shards targets are spread over.
func (s fleetShape) shardNames() []string {
	out := make([]string, s.shards)
	for i := range out {
		out[i] = fmt.Sprintf("shard-%d", i+1)
	}
	return out
}

// waves are pilot (10), canary (5%), general (the other standard targets)
// and critical (by label), as a platform team would write them.
func (s fleetShape) waves() []fleetv1alpha1.Wave {
	tier := func(v string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{tierLabel: v}}
	}
	n := func(i int) *intstr.IntOrString { v := intstr.FromInt32(int32(i)); return &v }
	pct := func(p string) *intstr.IntOrString { v := intstr.FromString(p); return &v }
	return []fleetv1alpha1.Wave{
		{Name: "pilot", Selector: tier("standard"), Count: n(10), MaxConcurrent: n(10)},
		{Name: "canary", Selector: tier("standard"), Count: pct("5%"), MaxConcurrent: pct("10%"), MaxFailures: n(s.canaryMaxFailures)},
		{Name: "general", Selector: tier("standard"), MaxConcurrent: n(s.generalConcurrent)},
		{Name: "critical", Selector: tier("critical"), MaxConcurrent: pct("10%")},
	}
}

// inlineTargets returns the inline targets. Every canaryFailEvery-th canary member
// (in plan order, so failures spread over the wave) carries the simulator's
// fault knobs for the bad Freight only: Promotions of the good Freight
// succeed everywhere, the bad one fails there.
func (s fleetShape) inlineTargets() ([]fleetv1alpha1.InlineTarget, int, error) {
	out := make([]fleetv1alpha1.InlineTarget, s.targets)
	for i := range out {
		tier := "standard"
		if s.criticalEvery > 0 && i%s.criticalEvery == s.criticalEvery-1 {
			tier = "critical"
		}
		out[i] = fleetv1alpha1.InlineTarget{Name: fmt.Sprintf("t-%05d", i), Labels: map[string]string{tierLabel: tier}}
		if s.shards > 0 {
			out[i].Labels[shardLabel] = fmt.Sprintf("shard-%d", i%s.shards+1)
		}
	}
	canary, err := s.canaryMembers(out)
	if err != nil {
		return nil, 0, err
	}
	breaks := map[string]bool{}
	for i, id := range canary {
		if s.canaryFailEvery > 0 && i%s.canaryFailEvery == 0 {
			breaks[id] = true
		}
	}
	for i := range out {
		if breaks[plan.TargetID(out[i].Name)] {
			out[i].Params = map[string]string{kargosim.FaultVar: kargosim.FaultFail, kargosim.FaultFreightVar: badFreight}
		}
	}
	// The fault params must not move anyone: plan again and compare.
	again, err := s.canaryMembers(out)
	if err != nil {
		return nil, 0, err
	}
	if fmt.Sprint(again) != fmt.Sprint(canary) {
		return nil, 0, fmt.Errorf("the canary wave changed when fault params were added")
	}
	return out, len(breaks), nil
}

// canaryMembers plans the fleet with the controller's own pure planner and
// returns the canary wave's target IDs in plan order.
func (s fleetShape) canaryMembers(targets []fleetv1alpha1.InlineTarget) ([]string, error) {
	fs := s.fleetStage(targets)
	p, err := plan.Plan(&fs.Spec, plan.PlanInput{
		Seed:         s.namespace + "/" + fleetName,
		Candidates:   inventory.FromInline(targets),
		AllowedTeams: plan.ParseAllowedTeams("", false),
	})
	if err != nil {
		return nil, fmt.Errorf("error planning the fleet: %w", err)
	}
	w, _ := p.Wave("canary")
	if w == nil {
		return nil, fmt.Errorf("the plan has no canary wave")
	}
	ids := make([]string, 0, len(w.Members))
	for _, t := range w.Members {
		ids = append(ids, t.ID)
	}
	return ids, nil
}

// fleetStage is the FleetStage over targets: adopt "prod", roll back
// automatically on a breach, let in-flight Promotions finish.
func (s fleetShape) fleetStage(targets []fleetv1alpha1.InlineTarget) *fleetv1alpha1.FleetStage {
	var shards *fleetv1alpha1.ShardsSpec
	if s.shards > 0 {
		shards = &fleetv1alpha1.ShardsSpec{TargetLabel: shardLabel}
	}
	return &fleetv1alpha1.FleetStage{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: fleetName},
		Spec: fleetv1alpha1.FleetStageSpec{
			Stage: fleetv1alpha1.StageSource{FromStage: adopted},
			Targets: fleetv1alpha1.TargetsSpec{Sources: []fleetv1alpha1.TargetSource{{
				Kind: fleetv1alpha1.InlineSource, Inline: targets,
			}}},
			Waves: s.waves(),
			Policy: fleetv1alpha1.FleetPolicy{
				OnHalt:   fleetv1alpha1.InFlightFinish,
				Rollback: fleetv1alpha1.RollbackPolicy{Mode: fleetv1alpha1.RollbackAutomatic},
			},
			Shards: shards,
		},
	}
}

// createProject creates the Project, the adopted Stage and the two Freight.
// There is no ProjectConfig: kargo-fleet hands the Freight from wave to
// wave itself, as in a real installation.
func createProject(ctx context.Context, c client.Client, namespace string) error {
	origin := kargo.FreightOrigin{Kind: kargo.OriginKindWarehouse, Name: "apps"}
	objs := []client.Object{
		envtest.ProjectNamespace(namespace),
		&kargo.Stage{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: adopted},
			Spec: kargo.StageSpec{
				RequestedFreight: []kargo.FreightRequest{{Origin: origin, Sources: kargo.FreightSources{Direct: true}}},
				PromotionTemplate: &kargo.PromotionTemplate{Spec: kargo.PromotionTemplateSpec{Steps: []kargo.PromotionStep{{
					Uses: "argocd-update", As: "sync",
					Config: &apiextensionsv1.JSON{Raw: []byte(`{"apps":[{"name":"guestbook-${{ vars.fleetTargetId }}"}]}`)},
				}}}},
			},
		},
	}
	for i, name := range []string{goodFreight, badFreight} {
		objs = append(objs, &kargo.Freight{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
			Origin:     origin,
			Images:     []apiextensionsv1.JSON{{Raw: fmt.Appendf(nil, `{"repoURL":"example.com/guestbook","tag":"v%d"}`, i+1)}},
		})
	}
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil {
			return fmt.Errorf("error creating %T %q: %w", o, o.GetName(), err)
		}
	}
	return nil
}
