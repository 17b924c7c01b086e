package fleetstages

import (
	"context"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/render"
)

// A generated Stage whose spec someone changed (a `kubectl apply`, a GitOps
// tool, the Kargo UI) is restored by its own, per-Stage path: one cached
// read, one comparison and at most one patch, with its own workqueue. The
// whole-fleet reconcile (inventory, plan, render and compare every Stage)
// costs time in proportion to the fleet and runs back to back while a
// rollout rewrites wave Stage descriptions; a restore queued behind it
// waited for the one in flight and then for its own, seconds on a busy
// API server. The restore path compares with what the last whole-fleet
// reconcile of this process rendered, and hands the Stage to the
// whole-fleet reconcile whenever that is not known to be current: no
// rendering yet (after a start), a FleetStage whose generation moved on, a
// Stage whose UID is not the recorded one.

// desiredStage is what the last whole-fleet reconcile rendered for one
// generated Stage.
type desiredStage struct {
	stage *kargo.Stage
	// uid is the recorded UID of the Stage: only that Stage is restored.
	uid types.UID
	// generation is the FleetStage generation it was rendered from.
	generation int64
}

// desiredStages holds the desired generated Stages of every FleetStage,
// by Stage key, as the last successful sync left them.
type desiredStages struct {
	mu     sync.RWMutex
	stages map[types.NamespacedName]desiredStage
	// byFleet lists the keys each FleetStage holds, to replace them at once.
	byFleet map[types.NamespacedName][]types.NamespacedName
}

func newDesiredStages() *desiredStages {
	return &desiredStages{stages: map[types.NamespacedName]desiredStage{},
		byFleet: map[types.NamespacedName][]types.NamespacedName{}}
}

// set replaces the desired Stages of fs with desired, each known by the UID
// record gives it; a Stage without a recorded UID is left to the
// whole-fleet reconcile.
func (d *desiredStages) set(fs *fleetv1alpha1.FleetStage, desired []*kargo.Stage, record map[string]types.UID) {
	fleet := client.ObjectKeyFromObject(fs)
	keys := make([]types.NamespacedName, 0, len(desired))
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, k := range d.byFleet[fleet] {
		delete(d.stages, k)
	}
	for _, st := range desired {
		uid := record[st.Name]
		if uid == "" {
			continue
		}
		k := types.NamespacedName{Namespace: fs.Namespace, Name: st.Name}
		d.stages[k] = desiredStage{stage: st, uid: uid, generation: fs.Generation}
		keys = append(keys, k)
	}
	d.byFleet[fleet] = keys
}

// forget drops the desired Stages of a FleetStage.
func (d *desiredStages) forget(fleet types.NamespacedName) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, k := range d.byFleet[fleet] {
		delete(d.stages, k)
	}
	delete(d.byFleet, fleet)
}

func (d *desiredStages) get(k types.NamespacedName) (desiredStage, bool) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	ds, ok := d.stages[k]
	return ds, ok
}

// restoreReconciler restores one generated Stage's spec, labels and
// annotations to what its FleetStage rendered.
type restoreReconciler struct {
	client  client.Client
	desired *desiredStages
	// fleets asks the whole-fleet reconcile to look at a FleetStage.
	fleets chan<- event.GenericEvent
}

// Reconcile restores the Stage req names, or hands it to the whole-fleet
// reconcile of its FleetStage when the rendering at hand is not current.
func (r *restoreReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	st := &kargo.Stage{}
	if err := r.client.Get(ctx, req.NamespacedName, st); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	fleet := st.Labels[fleetv1alpha1.FleetStageLabel]
	if fleet == "" || !st.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	fs := &fleetv1alpha1.FleetStage{}
	if err := r.client.Get(ctx, client.ObjectKey{Namespace: st.Namespace, Name: fleet}, fs); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	want, ok := r.desired.get(req.NamespacedName)
	if !ok || want.uid != st.UID || want.generation != fs.Generation {
		r.reconcileFleet(ctx, fs)
		return ctrl.Result{}, nil
	}
	if render.UpToDate(st, want.stage) {
		return ctrl.Result{}, nil
	}
	if err := restoreStage(ctx, r.client, st, want.stage); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	ctrl.LoggerFrom(ctx).Info("Restored a generated Stage someone changed", "Stage", klog.KObj(st),
		"FleetStage", klog.KObj(fs))
	return ctrl.Result{}, nil
}

// reconcileFleet queues the whole-fleet reconcile of fs.
func (r *restoreReconciler) reconcileFleet(ctx context.Context, fs *fleetv1alpha1.FleetStage) {
	select {
	case r.fleets <- event.GenericEvent{Object: fs}:
	case <-ctx.Done():
	}
}

// restoreStage patches cur to what desired renders, keeping everything
// else, and clears the prune mark: the Stage is wanted.
func restoreStage(ctx context.Context, c client.Client, cached, desired *kargo.Stage) error {
	cur := cached.DeepCopy()
	patch := client.MergeFrom(cached)
	render.Apply(cur, desired)
	delete(cur.Annotations, fleetv1alpha1.PruneAnnotation)
	if err := c.Patch(ctx, cur, patch); err != nil {
		return fmt.Errorf("error updating Stage %q: %w", desired.Name, err)
	}
	return nil
}
