// Package dashtest builds a fleet in the middle of a rollout, as the
// controller and Kargo would have left it, for the dashboard's tests and
// page-weight measurements: a FleetStage, its FleetRollout with the plan
// snapshot, one target Stage per target and the target Promotions.
package dashtest

import (
	"context"
	"fmt"
	"time"

	"github.com/kargo-fleet/kargo-fleet/internal/fleetrollout"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
	"github.com/kargo-fleet/kargo-fleet/internal/render"
)

// Names of the fixture.
const (
	Namespace  = "shop"
	FleetStage = "prod"
	Rollout    = "prod-57f6eecd64"
	Warehouse  = "guestbook"
	// GoodFreight and BadFreight name v1.4.0 and v1.5.0.
	GoodFreight = "97e5d51fdfb4fc056797ea8d02343f9429619d8d"
	BadFreight  = "fba72e3c5d1b5e0e4f2a6c8b9d0e1f2a3b4c5d6e"
	// FailureMessage is the message of the failed canary Promotions.
	FailureMessage = `simulated failure of step "sync" (argocd-update)`
)

// Regions are the target regions, one label value each.
var Regions = []string{"ap-south-1", "eu-central-1", "eu-west-1", "us-east-1", "us-west-2"}

// Fleet is a fleet of N targets in the middle of rolling out v1.5.0: pilot
// succeeded, canary succeeded but for two failed targets (at its limit of
// two), general is progressing with its last ten targets in flight, and
// critical will wait behind an approval gate once general is through.
type Fleet struct {
	// NS is the fleet's Kargo Project (Namespace unless NewFleetIn says).
	NS   string
	N    int
	Now  time.Time
	Plan *plan.WavePlan
	// Good and Bad are the Freight names of v1.4.0 and v1.5.0.
	Good, Bad string

	fleetStage *fleetv1alpha1.FleetStage
	rollout    *fleetv1alpha1.FleetRollout
	// rollback and rollbackPlan are set by Breach.
	rollback     *fleetv1alpha1.FleetRollout
	rollbackPlan *plan.WavePlan
	stages       []*kargo.Stage
	promotions   []*kargo.Promotion
	// state is each target's state by ID: s, f, i or p.
	state map[string]byte
}

// NewFleet builds a fleet of n (at least 20) targets in Namespace.
func NewFleet(n int, now time.Time) *Fleet {
	return NewFleetIn(Namespace, n, now)
}

// NewFleetIn builds a fleet of n (at least 20) targets in the Project ns.
func NewFleetIn(ns string, n int, now time.Time) *Fleet {
	f := &Fleet{NS: ns, N: n, Now: now, Good: GoodFreight, Bad: BadFreight,
		state: map[string]byte{}}
	perRegion := map[string]int{}
	canary, critical := n/10, n/10
	waves := []plan.PlannedWave{
		{Name: "pilot", MaxConcurrent: 2, MaxFailures: 0},
		{Name: "canary", MaxConcurrent: 10, MaxFailures: 2},
		{Name: "general", MaxConcurrent: 10, MaxFailures: (n - 2 - canary - critical) / 10},
		{Name: "critical", MaxConcurrent: 5, MaxFailures: 0, Approval: fleetv1alpha1.ApprovalRequired},
	}
	for i := range n {
		region := Regions[i%len(Regions)]
		perRegion[region]++
		name := fmt.Sprintf("%s-%02d", region, perRegion[region])
		w := 2
		switch {
		case i < 2:
			w = 0
		case i < 2+canary:
			w = 1
		case i >= n-critical:
			w = 3
		}
		tier := "standard"
		if w == 3 {
			tier = "critical"
		}
		waves[w].Members = append(waves[w].Members, plan.Target{ID: name, Name: name, Source: "ArgoCDCluster",
			Labels: map[string]string{"region": region, "tier": tier},
			Params: map[string]string{"server": "https://" + name + ".k8s.example.com", "region": region}})
	}
	for i := range waves {
		waves[i].ProgressDeadline = 15 * time.Minute
	}
	f.Plan = &plan.WavePlan{Hash: "57f6eecd64aa", Waves: waves, Candidates: n}
	for wi, w := range waves {
		for mi, t := range w.Members {
			var st byte
			switch w.Name {
			case "pilot":
				st = 's'
			case "canary":
				st = 's'
				if mi < 2 {
					st = 'f'
				}
			case "general":
				st = 's'
				if mi >= len(w.Members)-10 {
					st = 'i'
				}
			default:
				st = 'p'
			}
			f.state[t.ID] = st
			f.addTarget(wi, t, st)
		}
	}
	f.buildFleetStage()
	f.buildRollout()
	return f
}

func (f *Fleet) addTarget(wi int, t plan.Target, st byte) {
	w := f.Plan.Waves[wi]
	origin := kargo.FreightOrigin{Kind: kargo.OriginKindWarehouse, Name: Warehouse}
	src := kargo.FreightSources{Direct: true}
	if wi > 0 {
		src = kargo.FreightSources{Stages: []string{render.WaveStageName(FleetStage, f.Plan.Waves[wi-1].Name)}}
	}
	stage := &kargo.Stage{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.NS, Name: render.TargetStageName(FleetStage, t.ID),
			Labels: map[string]string{fleetv1alpha1.FleetStageLabel: FleetStage, fleetv1alpha1.RoleLabel: fleetv1alpha1.RoleTarget,
				fleetv1alpha1.WaveLabel: w.Name, fleetv1alpha1.TargetLabel: t.ID},
			Annotations: map[string]string{fleetv1alpha1.TargetNameAnnotation: t.Name}},
		Spec: kargo.StageSpec{RequestedFreight: []kargo.FreightRequest{{Origin: origin, Sources: src}},
			Vars: []kargo.ExpressionVariable{{Name: render.VarTarget, Value: t.Name}, {Name: "server", Value: t.Params["server"]}}},
	}
	stage.Status.Health = &kargo.Health{Status: kargo.HealthHealthy}
	history := []string{f.Good}
	if st == 's' {
		history = []string{f.Bad, f.Good}
	}
	for _, name := range history {
		stage.Status.FreightHistory = append(stage.Status.FreightHistory, kargo.FreightCollection{ID: name[:12],
			Items: map[string]kargo.FreightReference{origin.Key(): {Name: name, Origin: origin}}})
	}
	f.stages = append(f.stages, stage)
	if st == 'p' {
		return
	}
	p := &kargo.Promotion{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.NS, Name: stage.Name + ".01k" + t.ID[len(t.ID)-2:] + "." + f.Bad[:7],
			CreationTimestamp: metav1.NewTime(f.Now.Add(-time.Minute)),
			Labels: map[string]string{fleetv1alpha1.FleetStageLabel: FleetStage, fleetv1alpha1.RolloutLabel: Rollout,
				fleetv1alpha1.TargetLabel: t.ID, fleetv1alpha1.WaveLabel: w.Name}},
		Spec: kargo.PromotionSpec{Stage: stage.Name, Freight: f.Bad,
			Steps: []kargo.PromotionStep{{Uses: "argocd-update", As: "sync"}}},
	}
	switch st {
	case 's':
		p.Status.Phase = kargo.PromotionSucceeded
	case 'f':
		p.Status.Phase, p.Status.Message = kargo.PromotionFailed, FailureMessage
	default:
		p.Status.Phase = kargo.PromotionRunning
	}
	f.promotions = append(f.promotions, p)
}

func (f *Fleet) buildFleetStage() {
	fs := &fleetv1alpha1.FleetStage{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.NS, Name: FleetStage},
		Spec: fleetv1alpha1.FleetStageSpec{
			Stage: fleetv1alpha1.StageSource{FromStage: "prod"},
			Targets: fleetv1alpha1.TargetsSpec{Sources: []fleetv1alpha1.TargetSource{{
				Kind: fleetv1alpha1.ArgoCDClusterSource}}},
			Waves: []fleetv1alpha1.Wave{
				{Name: "pilot", Count: ptr(intstr.FromInt32(2))},
				{Name: "canary", Count: ptr(intstr.FromString("10%")), MaxFailures: ptr(intstr.FromInt32(2))},
				{Name: "general", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "standard"}},
					MaxFailures: ptr(intstr.FromString("10%"))},
				{Name: "critical", Approval: fleetv1alpha1.ApprovalRequired},
			},
		},
	}
	fs.Status.Conditions = []metav1.Condition{{Type: fleetv1alpha1.ReadyCondition, Status: metav1.ConditionTrue,
		Reason: "Reconciled", Message: "Targets resolved and Stages in step", LastTransitionTime: metav1.NewTime(f.Now)}}
	fs.Status.Targets = fleetv1alpha1.TargetCounts{Candidates: int32(f.N), Selected: int32(f.N)}
	for _, w := range f.Plan.Waves {
		fs.Status.Waves = append(fs.Status.Waves, fleetv1alpha1.WaveMembership{Name: w.Name,
			Stage: render.WaveStageName(FleetStage, w.Name), Members: int32(len(w.Members))})
	}
	fs.Status.WaveCount = int32(len(f.Plan.Waves))
	fs.Status.LastGoodFreight = &fleetv1alpha1.FreightReference{Name: f.Good}
	fs.Status.CurrentRollout = Rollout
	f.fleetStage = fs
	f.countVersions()
}

func (f *Fleet) countVersions() {
	bad := int32(0)
	for _, st := range f.state {
		if st == 's' {
			bad++
		}
	}
	f.fleetStage.Status.Versions = []fleetv1alpha1.FreightCount{{Freight: f.Good, Targets: int32(f.N) - bad},
		{Freight: f.Bad, Targets: bad}}
}

func (f *Fleet) buildRollout() {
	started := metav1.NewTime(f.Now.Add(-2 * time.Minute))
	f.rollout = &fleetv1alpha1.FleetRollout{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.NS, Name: Rollout,
			Labels: map[string]string{fleetv1alpha1.FleetStageLabel: FleetStage}},
		Spec: fleetv1alpha1.FleetRolloutSpec{FleetStage: FleetStage, Freight: fleetv1alpha1.FreightReference{Name: f.Bad},
			Direction: fleetv1alpha1.DirectionForward, Intent: fleetv1alpha1.IntentRun, Actor: "kubernetes:admin"},
	}
	f.rollout.Status.StartedAt = &started
	f.rollout.Status.Snapshot = &fleetv1alpha1.PlanSnapshot{PlanHash: f.Plan.Hash, Targets: int32(f.N),
		ConfigMap: fleetrollout.SnapshotName(Rollout), TakenAt: &started}
	f.progress()
}

// progress recomputes the rollout's status from the targets' states, as
// the controller would.
func (f *Fleet) progress() {
	st := &f.rollout.Status
	st.Waves = nil
	st.Phase, st.Message = fleetv1alpha1.RolloutProgressing, "wave general: promoting"
	var failures fleetv1alpha1.FailureGroup
	waiting := false
	for _, w := range f.Plan.Waves {
		wp := fleetv1alpha1.WaveProgress{Name: w.Name, Total: int32(len(w.Members))}
		for _, t := range w.Members {
			switch f.state[t.ID] {
			case 's':
				wp.Succeeded++
			case 'f':
				wp.Failed++
				failures.Count++
				failures.Examples = append(failures.Examples, fleetv1alpha1.TargetSample{Name: t.Name, Reason: FailureMessage})
			case 'i':
				wp.InFlight++
			default:
				wp.Pending++
			}
		}
		switch {
		case wp.Succeeded+wp.Failed == wp.Total:
			wp.Phase = fleetv1alpha1.WaveSucceeded
		case wp.Succeeded+wp.Failed+wp.InFlight > 0:
			wp.Phase = fleetv1alpha1.WaveProgressing
		case w.Approval == fleetv1alpha1.ApprovalRequired && !waiting && len(st.Waves) > 0 &&
			st.Waves[len(st.Waves)-1].Phase == fleetv1alpha1.WaveSucceeded:
			wp.Phase = fleetv1alpha1.WaveWaitingForApproval
			wp.Waiting = "waiting for approval: " + kargo.ApproveCommand(f.NS, f.Bad, render.WaveStageName(FleetStage, w.Name))
			st.Phase, st.Message, waiting = fleetv1alpha1.RolloutWaitingForApproval, wp.Waiting, true
		default:
			wp.Phase = fleetv1alpha1.WavePending
		}
		st.Waves = append(st.Waves, wp)
	}
	st.Failures = nil
	if failures.Count > 0 {
		failures.Reason = "PromotionFailed"
		st.Failures = []fleetv1alpha1.FailureGroup{failures}
	}
}

// Objects returns every object of the fleet, status included, plus the
// Freight and the snapshot ConfigMap.
func (f *Fleet) Objects() []client.Object {
	raw, err := plan.EncodeSnapshot(f.Plan)
	if err != nil {
		panic(err)
	}
	objs := []client.Object{f.fleetStage.DeepCopy(), f.rollout.DeepCopy(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.NS, Name: fleetrollout.SnapshotName(Rollout)},
		BinaryData: map[string][]byte{plan.SnapshotKey: raw}}}
	for i, alias := range []string{"v1.4.0", "v1.5.0"} {
		objs = append(objs, &kargo.Freight{
			ObjectMeta: metav1.ObjectMeta{Namespace: f.NS, Name: []string{f.Good, f.Bad}[i]},
			Alias:      alias,
			Origin:     kargo.FreightOrigin{Kind: kargo.OriginKindWarehouse, Name: Warehouse},
			Images: []apiextensionsv1.JSON{{Raw: fmt.Appendf(nil,
				`{"repoURL":"ghcr.io/example/guestbook","tag":%q,"digest":"sha256:%s"}`, alias, []string{f.Good, f.Bad}[i])}},
		})
	}
	objs = append(objs, f.breachObjects()...)
	for _, s := range f.stages {
		objs = append(objs, s.DeepCopy())
	}
	for _, p := range f.promotions {
		objs = append(objs, p.DeepCopy())
	}
	return objs
}

// Create creates the fleet through c, writing each status through the
// status subresource.
func (f *Fleet) Create(ctx context.Context, c client.Client) error {
	for _, obj := range f.Objects() {
		status := obj.DeepCopyObject().(client.Object)
		if err := c.Create(ctx, obj); err != nil {
			return fmt.Errorf("error creating %T %s: %w", obj, obj.GetName(), err)
		}
		switch obj.(type) {
		case *corev1.ConfigMap, *kargo.Freight:
			continue
		}
		status.SetResourceVersion(obj.GetResourceVersion())
		status.SetUID(obj.GetUID())
		if err := c.Status().Update(ctx, status); err != nil {
			return fmt.Errorf("error writing the status of %T %s: %w", obj, obj.GetName(), err)
		}
	}
	return nil
}

// InFlight returns the IDs of the targets in flight.
func (f *Fleet) InFlight() []string {
	var ids []string
	for _, w := range f.Plan.Waves {
		for _, t := range w.Members {
			if f.state[t.ID] == 'i' {
				ids = append(ids, t.ID)
			}
		}
	}
	return ids
}

// Finish makes the in-flight target id succeed, as Kargo and the controller
// would: its Promotion succeeds, its Stage runs v1.5.0, and the rollout and
// FleetStage statuses count it.
func (f *Fleet) Finish(ctx context.Context, c client.Client, id string) error {
	f.state[id] = 's'
	for _, p := range f.promotions {
		if p.Labels[fleetv1alpha1.TargetLabel] != id {
			continue
		}
		cur := &kargo.Promotion{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(p), cur); err != nil {
			return err
		}
		cur.Status.Phase = kargo.PromotionSucceeded
		if err := c.Status().Update(ctx, cur); err != nil {
			return fmt.Errorf("error finishing Promotion %s: %w", p.Name, err)
		}
	}
	st := &kargo.Stage{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: f.NS, Name: render.TargetStageName(FleetStage, id)}, st); err != nil {
		return err
	}
	origin := kargo.FreightOrigin{Kind: kargo.OriginKindWarehouse, Name: Warehouse}
	st.Status.FreightHistory = append([]kargo.FreightCollection{{ID: f.Bad[:12],
		Items: map[string]kargo.FreightReference{origin.Key(): {Name: f.Bad, Origin: origin}}}}, st.Status.FreightHistory...)
	if err := c.Status().Update(ctx, st); err != nil {
		return fmt.Errorf("error updating Stage %s: %w", st.Name, err)
	}
	return f.writeStatuses(ctx, c)
}

func (f *Fleet) writeStatuses(ctx context.Context, c client.Client) error {
	f.progress()
	f.countVersions()
	ro := &fleetv1alpha1.FleetRollout{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(f.rollout), ro); err != nil {
		return err
	}
	ro.Status = *f.rollout.Status.DeepCopy()
	if err := c.Status().Update(ctx, ro); err != nil {
		return fmt.Errorf("error updating FleetRollout %s: %w", ro.Name, err)
	}
	fs := &fleetv1alpha1.FleetStage{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(f.fleetStage), fs); err != nil {
		return err
	}
	fs.Status = *f.fleetStage.Status.DeepCopy()
	return c.Status().Update(ctx, fs)
}

func ptr[T any](v T) *T { return &v }
