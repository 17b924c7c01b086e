package fleetrollouts

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/fleetstage/controller/fleetplan"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetrollout"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
	"github.com/kargo-fleet/kargo-fleet/internal/rollout"
	"github.com/kargo-fleet/kargo-fleet/internal/rolloutstore"
)

// snapshots keeps, by rollout UID, the decoded plan snapshot and what is
// derived from it: a snapshot never changes, so it is read from the API
// server once per process, and its schedule index is built once per
// snapshot and FleetStage generation (the policy it is built under), not
// per reconcile. None of it is a source of truth: after a restart it is
// rebuilt from the API server.
type snapshots struct {
	mu sync.Mutex
	m  map[types.UID]*prepared
}

// prepared is one rollout's plan snapshot, its schedule index and the
// waves its Freight was seen approved for.
type prepared struct {
	plan *plan.WavePlan
	// index was built under the policy of FleetStage generation policyOf.
	index    *plan.ScheduleIndex
	policyOf policyKey
	// approved are the waves a read of the Freight found approved: Kargo
	// never takes an approval back, so they are not read again.
	approved map[string]bool
	// tracker keeps the rollout's interpretation of its targets between
	// decisions (fleetrollout_tracker.go).
	tracker *rollout.Tracker
}

// policyKey names the FleetStage spec an index was built under.
type policyKey struct {
	uid        types.UID
	generation int64
}

func (s *snapshots) get(uid types.UID) *plan.WavePlan {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.m[uid]; p != nil {
		return p.plan
	}
	return nil
}

func (s *snapshots) put(uid types.UID, p *plan.WavePlan) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[types.UID]*prepared{}
	}
	s.m[uid] = &prepared{plan: p, approved: map[string]bool{}}
}

func (s *snapshots) forget(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, uid)
}

// index returns the rollout's schedule index under fs's current policy,
// building it when the snapshot has none yet or fs's spec changed since.
func (s *snapshots) index(ro *fleetv1alpha1.FleetRollout, fs *fleetv1alpha1.FleetStage, p *plan.WavePlan) (*plan.ScheduleIndex, error) {
	key := policyKey{uid: fs.UID, generation: fs.Generation}
	s.mu.Lock()
	pr := s.m[ro.UID]
	if pr != nil && pr.plan == p && pr.index != nil && pr.policyOf == key {
		idx := pr.index
		s.mu.Unlock()
		return idx, nil
	}
	s.mu.Unlock()
	idx, err := rollout.NewIndex(ro, fs, p)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if pr := s.m[ro.UID]; pr != nil && pr.plan == p {
		pr.index, pr.policyOf = idx, key
	}
	return idx, nil
}

// approvals returns a copy of the waves the rollout's Freight was seen
// approved for.
func (s *snapshots) approvals(uid types.UID) map[string]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if pr := s.m[uid]; pr != nil {
		return maps.Clone(pr.approved)
	}
	return nil
}

// approve records waves the rollout's Freight was seen approved for.
func (s *snapshots) approve(uid types.UID, waves map[string]bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if pr := s.m[uid]; pr != nil {
		maps.Copy(pr.approved, waves)
	}
}

// ensureSnapshot returns the rollout's plan snapshot, taking it first if it
// does not exist. A forward rollout snapshots the FleetStage's current plan;
// a rollback snapshots the targets the rolled-back rollout moved, in reverse
// wave order. Taking it twice (after a crash) finds the first one.
func (r *FleetRolloutReconciler) ensureSnapshot(ctx context.Context, ro *fleetv1alpha1.FleetRollout, fs *fleetv1alpha1.FleetStage) (*plan.WavePlan, error) {
	if p := r.snapshots.get(ro.UID); p != nil {
		return p, nil
	}
	var p *plan.WavePlan
	var err error
	if ro.Spec.Direction == fleetv1alpha1.DirectionRollback && ro.Status.Snapshot == nil {
		// A new rollback, most often, created right after a breach: take
		// the snapshot straight away, its first Promotion waits for it.
		// One taken before a restart that the status does not show yet is
		// found by the create, which then reads it instead.
		p, err = r.takeSnapshot(ctx, ro, fs)
	} else if p, err = r.readSnapshot(ctx, ro); apierrors.IsNotFound(err) {
		p, err = r.takeSnapshot(ctx, ro, fs)
	}
	if err != nil {
		return nil, err
	}
	r.snapshots.put(ro.UID, p)
	return p, nil
}

// readSnapshot reads a rollout's plan snapshot. The ConfigMap's name is
// predictable, so it counts only when the rollout controls it: a ConfigMap
// someone else created under that name is refused, not trusted.
func (r *FleetRolloutReconciler) readSnapshot(ctx context.Context, ro *fleetv1alpha1.FleetRollout) (*plan.WavePlan, error) {
	cm := &corev1.ConfigMap{}
	if err := r.reader.Get(ctx, client.ObjectKey{Namespace: ro.Namespace, Name: fleetrollout.SnapshotName(ro.Name)}, cm); err != nil {
		return nil, err
	}
	if owner := metav1.GetControllerOf(cm); owner == nil || owner.UID != ro.UID || owner.Kind != "FleetRollout" {
		return nil, &foreignSnapshotError{configMap: cm.Name, rollout: ro.Name}
	}
	p, err := plan.DecodeSnapshot(cm.BinaryData[plan.SnapshotKey])
	if err != nil {
		return nil, fmt.Errorf("error decoding plan snapshot %q: %w", cm.Name, err)
	}
	return p, nil
}

func (r *FleetRolloutReconciler) takeSnapshot(ctx context.Context, ro *fleetv1alpha1.FleetRollout, fs *fleetv1alpha1.FleetStage) (*plan.WavePlan, error) {
	var p *plan.WavePlan
	if ro.Spec.Direction == fleetv1alpha1.DirectionRollback {
		var err error
		if p, err = r.rollbackPlan(ctx, ro, fs); err != nil {
			return nil, err
		}
	} else {
		fp, err := fleetplan.Plan(ctx, r.client, r.inventory, fs)
		if err != nil {
			return nil, fmt.Errorf("error planning FleetStage %q for rollout %q: %w", fs.Name, ro.Name, err)
		}
		p = fp.Plan
	}
	p = &plan.WavePlan{Hash: p.Hash, Waves: p.Waves, FleetMaxFailures: p.FleetMaxFailures}
	raw, err := plan.EncodeSnapshot(p)
	if err != nil {
		return nil, err
	}
	immutable, controller := true, true
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ro.Namespace, Name: fleetrollout.SnapshotName(ro.Name),
			Labels: map[string]string{fleetv1alpha1.FleetStageLabel: fs.Name, fleetv1alpha1.RolloutLabel: ro.Name},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: fleetv1alpha1.GroupVersion.String(), Kind: "FleetRollout", Name: ro.Name, UID: ro.UID, Controller: &controller,
			}},
		},
		Immutable:  &immutable,
		BinaryData: map[string][]byte{plan.SnapshotKey: raw},
	}
	if err := r.client.Create(ctx, cm); apierrors.IsAlreadyExists(err) {
		return r.readSnapshot(ctx, ro)
	} else if err != nil {
		return nil, fmt.Errorf("error writing plan snapshot of rollout %q: %w", ro.Name, err)
	}
	r.event(ro, corev1.EventTypeNormal, SnapshotTakenReason, "Took the plan snapshot: %d target(s) in %d wave(s) (plan %s)",
		p.Members(), len(p.Waves), shortHash(p.Hash))
	return p, nil
}

// errClaimLanding holds a rollback's plan back until the Promotions the
// rolled-back rollout claimed last exist (or the claim is older than
// claimWindow).
var errClaimLanding = errors.New("the rolled-back rollout's last claimed Promotions are not all created yet")

// rollbackPlan is the plan of a rollback, as rollout.PlanRollback lays it
// out: the waves of the rolled-back rollout in reverse order, each holding
// only the targets that rollout started a Promotion for — exactly the
// targets that moved and no earlier attempt returned. A rollback
// PlanRollback refuses (whoever created the object, whatever it names) is a
// *rollout.RollbackRefusal: it never runs.
func (r *FleetRolloutReconciler) rollbackPlan(ctx context.Context, ro *fleetv1alpha1.FleetRollout, fs *fleetv1alpha1.FleetStage) (*plan.WavePlan, error) {
	// The targets that moved are read from the API server, not the cache: a
	// Promotion created just before the breach may not be in the cache yet,
	// and the rollback's plan is frozen once taken. The read runs beside
	// that of the rollouts: right after a breach each round trip delays
	// the rollback's first Promotion.
	type listed struct {
		promos *metav1.PartialObjectMetadataList
		err    error
	}
	movedOf := make(chan listed, 1)
	go func() {
		l, err := r.promotionsOfRollout(ctx, ro.Namespace, ro.Spec.RollbackOf)
		movedOf <- listed{l, err}
	}()
	records, err := rolloutstore.RollbackRecords(ctx, r.reader, fs, ro.Spec.RollbackOf)
	moved := <-movedOf
	if err != nil {
		return nil, err
	}
	p := rollout.PlanRollback(rollout.RollbackRequest{Asker: rollout.AskedByObject, FleetStage: fs, Rollouts: records, Rollback: ro})
	if p.Refused != nil {
		return nil, p.Refused
	}
	of := p.Of
	// The rolled-back rollout's plan is in memory when this process ran
	// it: a breach is followed by its rollback at once.
	orig := r.snapshots.get(of.UID)
	if orig == nil {
		if orig, err = r.readSnapshot(ctx, of); err != nil {
			return nil, fmt.Errorf("error reading the plan of rolled-back rollout %q: %w", of.Name, err)
		}
	}
	if of.Name != ro.Spec.RollbackOf {
		moved.promos, moved.err = r.promotionsOfRollout(ctx, ro.Namespace, of.Name)
	}
	if moved.err != nil {
		return nil, moved.err
	}
	movedTargets := map[string]bool{}
	for i := range moved.promos.Items {
		movedTargets[moved.promos.Items[i].Labels[fleetv1alpha1.TargetLabel]] = true
	}
	returned, err := r.returnedEarlier(ctx, ro)
	if err != nil {
		return nil, err
	}
	// A batch claimed a moment ago may still be landing: another controller
	// that overlapped the leader can have claimed it just before the halt.
	// Its targets move, so they must be in the frozen plan. A batch of this
	// process whose creates all returned has landed, whatever it dropped.
	if d := of.Status.Dispatch; d != nil && r.clock.Since(d.At.Time) < claimWindow && !r.landed.has(of.UID, d) {
		for _, k := range d.Keys {
			if !strings.HasPrefix(k, rollout.WavePromotionKey) && !movedTargets[k] {
				return nil, errClaimLanding
			}
		}
	}
	return p.Waves(orig, movedTargets, returned), nil
}

// promotionsOfRollout lists, from the API server, the metadata of the
// target Promotions the rollout named rollout created.
func (r *FleetRolloutReconciler) promotionsOfRollout(ctx context.Context, namespace, rollout string) (*metav1.PartialObjectMetadataList, error) {
	promos := &metav1.PartialObjectMetadataList{}
	promos.SetGroupVersionKind(kargo.GroupVersion.WithKind("PromotionList"))
	if err := r.reader.List(ctx, promos, client.InNamespace(namespace),
		client.MatchingLabels{fleetv1alpha1.RolloutLabel: rollout}); err != nil {
		return nil, fmt.Errorf("error listing Promotions of rollout %q: %w", rollout, err)
	}
	return promos, nil
}

func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// foreignSnapshotError says a ConfigMap under a rollout's snapshot name is
// not the rollout's own: the rollout cannot run on a plan someone else wrote.
type foreignSnapshotError struct {
	configMap, rollout string
}

func (e *foreignSnapshotError) Error() string {
	return fmt.Sprintf("ConfigMap %q is named like the plan snapshot of FleetRollout %q but is not controlled by it: "+
		"the rollout does not run on a plan it did not take; delete the ConfigMap and create the rollout again", e.configMap, e.rollout)
}
