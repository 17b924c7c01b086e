package controller

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/fleetstage/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// summarise records the version distribution of the target Stages.
func (r *FleetStageReconciler) summarise(ctx context.Context, s *scope) (bool, error) {
	targets := make([]kargo.Stage, 0, len(s.stages))
	for i := range s.stages {
		if s.stages[i].Labels[fleetv1alpha1.RoleLabel] == fleetv1alpha1.RoleTarget {
			targets = append(targets, s.stages[i])
		}
	}
	setVersions(s.fs, targets)
	defaultRolloutMetrics.observeVersions(s.fs.Namespace, s.fs.Name, s.fs.Status.Versions)
	return true, r.checkFreightStatusSize(ctx, s.fs)
}

// refreshVersions brings a FleetStage's version distribution (and its
// metric) up to date from the cached target Stages, writing nothing else.
func (r *FleetStageReconciler) refreshVersions(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	// The cache's own object, read only: copying ten thousand inline
	// targets every two seconds to count versions would cost more than the
	// count.
	fs := &fleetv1alpha1.FleetStage{}
	if err := r.client.Get(ctx, req.NamespacedName, fs, client.UnsafeDisableDeepCopy); err != nil {
		if apierrors.IsNotFound(err) {
			r.versionWrites.forget(req.NamespacedName)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !fs.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	interval := versionRefreshInterval(int(fs.Status.Targets.Selected))
	if wait := r.versionWrites.wait(req.NamespacedName, interval, r.clock.Now()); wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	stages := &kargo.StageList{}
	if err := r.client.List(ctx, stages, client.InNamespace(fs.Namespace), client.UnsafeDisableDeepCopy,
		client.MatchingLabels{fleetv1alpha1.FleetStageLabel: fs.Name, fleetv1alpha1.RoleLabel: fleetv1alpha1.RoleTarget}); err != nil {
		return reconcile.Result{}, fmt.Errorf("error listing target Stages of FleetStage %q: %w", fs.Name, err)
	}
	versions := countVersions(stages.Items)
	defaultRolloutMetrics.observeVersions(fs.Namespace, fs.Name, versions)
	if reflect.DeepEqual(fs.Status.Versions, versions) {
		return reconcile.Result{}, nil
	}
	after := fs.Status.DeepCopy()
	after.Versions = versions
	if err := patchFleetStageStatus(ctx, r.client, fs, &fs.Status, after); err != nil {
		return reconcile.Result{}, fmt.Errorf("error patching the versions of FleetStage %q: %w", fs.Name, err)
	}
	r.versionWrites.wrote(req.NamespacedName, r.clock.Now())
	return reconcile.Result{}, nil
}

// versionRefreshInterval is the least time between two writes of a
// FleetStage's version distribution: 1 ms per target, at least 2 s and at
// most 10 s (from 10,000 targets). Every status write sends the whole
// FleetStage to every watcher, and a fleet of inline targets is megabytes.
func versionRefreshInterval(targets int) time.Duration {
	return min(max(time.Duration(targets)*time.Millisecond, versionRefreshDelay), 10*time.Second)
}

// writeTimes remembers when each FleetStage's versions were last written.
type writeTimes struct {
	mu   sync.Mutex
	last map[types.NamespacedName]time.Time
}

// wait returns how long a write to key must still wait to keep interval.
func (w *writeTimes) wait(key types.NamespacedName, interval time.Duration, now time.Time) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	at, ok := w.last[key]
	if !ok {
		return 0
	}
	return max(at.Add(interval).Sub(now), 0)
}

// wrote records a write to key at now.
func (w *writeTimes) wrote(key types.NamespacedName, now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.last == nil {
		w.last = map[types.NamespacedName]time.Time{}
	}
	w.last[key] = now
}

// forget drops a deleted FleetStage.
func (w *writeTimes) forget(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.last, key)
}

// freightStatusWarnBytes is where FreightStatusLarge turns True: two thirds
// of the object limit, leaving room for the Freight's own content and for
// Stage names longer than estimated.
const freightStatusWarnBytes = kargo.FreightObjectLimitBytes * 2 / 3

// checkFreightStatusSize sets FreightStatusLarge from the names of every
// Stage of the Project (other FleetStages' and the Project's own count too:
// they all share its Freight), and warns once when it turns True.
func (r *FleetStageReconciler) checkFreightStatusSize(ctx context.Context, fs *fleetv1alpha1.FleetStage) error {
	stages := &kargo.StageList{}
	if err := r.client.List(ctx, stages, client.InNamespace(fs.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("error listing the Stages of Project %q: %w", fs.Namespace, err)
	}
	names := make([]string, len(stages.Items))
	for i := range stages.Items {
		names[i] = stages.Items[i].Name
	}
	cond := freightStatusCondition(fs, names, freightStatusWarnBytes)
	if cond.Status == metav1.ConditionTrue && !meta.IsStatusConditionTrue(fs.Status.Conditions, fleetv1alpha1.FreightStatusLargeCondition) {
		r.event(fs, "Warning", fleetv1alpha1.NearObjectLimitReason, "%s", cond.Message)
	}
	meta.SetStatusCondition(&fs.Status.Conditions, cond)
	return nil
}

// freightStatusCondition judges the estimated status of a Freight held and
// verified by every one of the Project's Stages against warnBytes.
func freightStatusCondition(fs *fleetv1alpha1.FleetStage, stages []string, warnBytes int) metav1.Condition {
	size := kargo.FreightStatusBytes(stages)
	cond := metav1.Condition{Type: fleetv1alpha1.FreightStatusLargeCondition, ObservedGeneration: fs.Generation,
		Status: metav1.ConditionFalse, Reason: fleetv1alpha1.WithinLimitReason}
	cond.Message = fmt.Sprintf("a Freight in all %d Stages of Project %q would carry about %d KiB of status; the apiserver refuses objects over %d KiB",
		len(stages), fs.Namespace, (size+1023)/1024, kargo.FreightObjectLimitBytes/1024)
	if size > warnBytes {
		cond.Status, cond.Reason = metav1.ConditionTrue, fleetv1alpha1.NearObjectLimitReason
		cond.Message += ": Kargo records one entry per Stage on each Freight and cannot record more past the limit; split the fleet across Projects"
	}
	return cond
}
