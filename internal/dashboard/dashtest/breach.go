package dashtest

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetrollout"
	"github.com/kargo-fleet/kargo-fleet/internal/inventory"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
)

// Rollback is the automatic rollback of Rollout that Breach starts.
const Rollback = Rollout + "-rb"

// BreachFailures is how many canary targets have failed after Breach: three
// more than canary's allowance of two.
const BreachFailures = 5

// Breach turns the fleet into the moment right after a breach: three more
// canary targets fail, the rollout halts on canary's threshold, and the
// automatic rollback starts returning the targets the rollout moved to
// v1.4.0 and becomes the FleetStage's current rollout. Call it before
// Objects or Create.
func (f *Fleet) Breach() {
	canary := f.Plan.Waves[1].Members
	for _, t := range canary[2:BreachFailures] {
		f.state[t.ID] = 'f'
		for _, p := range f.promotions {
			if p.Labels[fleetv1alpha1.TargetLabel] == t.ID {
				p.Status.Phase, p.Status.Message = kargo.PromotionFailed, FailureMessage
			}
		}
	}
	f.progress()
	st := &f.rollout.Status
	st.Phase = fleetv1alpha1.RolloutHalted
	st.Message = fmt.Sprintf(`wave "canary" breached its failure threshold: %d of %d targets failed, at most 2 may fail`,
		BreachFailures, len(canary))
	st.Waves[1].Phase = fleetv1alpha1.WaveHalted

	// The rollback returns the targets that run v1.5.0, last wave first;
	// its plan snapshot holds only them.
	rbPlan := &plan.WavePlan{Hash: "rb" + f.Plan.Hash[2:], Candidates: f.N}
	for i := len(f.Plan.Waves) - 1; i >= 0; i-- {
		w := f.Plan.Waves[i]
		w.Members = slices.DeleteFunc(slices.Clone(w.Members), func(t plan.Target) bool { return f.state[t.ID] != 's' })
		if len(w.Members) > 0 {
			rbPlan.Waves = append(rbPlan.Waves, w)
		}
	}
	started := metav1.NewTime(f.Now.Add(-20 * time.Second))
	rb := &fleetv1alpha1.FleetRollout{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.NS, Name: Rollback,
			Labels: map[string]string{fleetv1alpha1.FleetStageLabel: FleetStage}},
		Spec: fleetv1alpha1.FleetRolloutSpec{FleetStage: FleetStage, Freight: fleetv1alpha1.FreightReference{Name: f.Good},
			Direction: fleetv1alpha1.DirectionRollback, RollbackOf: Rollout, Intent: fleetv1alpha1.IntentRun,
			Actor: "kargo-fleet"},
	}
	rb.Status.Phase, rb.Status.Message = fleetv1alpha1.RolloutRollingBack, "wave general: returning targets to v1.4.0"
	rb.Status.StartedAt = &started
	rb.Status.Snapshot = &fleetv1alpha1.PlanSnapshot{PlanHash: rbPlan.Hash, Targets: int32(rbPlan.Members()),
		ConfigMap: fleetrollout.SnapshotName(Rollback), TakenAt: &started}
	for i, w := range rbPlan.Waves {
		wp := fleetv1alpha1.WaveProgress{Name: w.Name, Total: int32(len(w.Members)), Phase: fleetv1alpha1.WavePending,
			Pending: int32(len(w.Members))}
		if i == 0 {
			wp.Phase, wp.Succeeded, wp.InFlight = fleetv1alpha1.WaveProgressing, 40, 10
			wp.Pending = wp.Total - 50
		}
		rb.Status.Waves = append(rb.Status.Waves, wp)
	}
	f.rollback, f.rollbackPlan = rb, rbPlan
	f.fleetStage.Status.CurrentRollout = Rollback
}

// breachObjects are the rollback Breach started and its plan snapshot.
func (f *Fleet) breachObjects() []client.Object {
	if f.rollback == nil {
		return nil
	}
	raw, err := plan.EncodeSnapshot(f.rollbackPlan)
	if err != nil {
		panic(err)
	}
	return []client.Object{f.rollback.DeepCopy(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.NS, Name: fleetrollout.SnapshotName(Rollback)},
		BinaryData: map[string][]byte{plan.SnapshotKey: raw}}}
}

// Cloud is the cloud label of a target's region in the inventory: a label
// the plan snapshots do not carry.
func Cloud(region string) string {
	switch {
	case strings.HasPrefix(region, "us-"):
		return "aws"
	case strings.HasPrefix(region, "eu-"):
		return "gcp"
	}
	return "azure"
}

// Inventory returns the fleet's inventory: one Argo CD cluster Secret per
// target, labelled with its region, tier and cloud.
func (f *Fleet) Inventory() []client.Object {
	var objs []client.Object
	for _, w := range f.Plan.Waves {
		for _, t := range w.Members {
			objs = append(objs, &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Namespace: fleetv1alpha1.DefaultArgoCDNamespace, Name: "cluster-" + t.ID,
					Labels: map[string]string{inventory.ArgoCDSecretTypeLabel: inventory.ArgoCDSecretTypeCluster,
						"region": t.Labels["region"], "tier": t.Labels["tier"], "cloud": Cloud(t.Labels["region"])}},
				Data: map[string][]byte{"name": []byte(t.Name), "server": []byte(t.Params["server"])},
			})
		}
	}
	return objs
}
