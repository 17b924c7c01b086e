// Package versions holds the version refresh controller: it keeps a
// FleetStage's version distribution and its drift report current while
// targets change Freight, and reverts drifted targets under
// spec.policy.drift Revert.
package versions

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/fleetstage/controller/fleetstatus"
	"github.com/kargo-fleet/kargo-fleet/internal/drift"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/provenance"
	"github.com/kargo-fleet/kargo-fleet/internal/rolloutstore"
	"github.com/kargo-fleet/kargo-fleet/internal/stagerecord"
)

// Reconciler keeps FleetStage.status.versions, status.drift,
// status.applications, the Drifted condition and the kargo_fleet_targets_by_freight and
// kargo_fleet_drifted_targets metrics up to date while target Stages
// change Freight. It has a controller of its own: during a rollout the
// distribution changes all the time, and refreshing it must not mean
// rendering and comparing every Stage of the fleet.
//
// +kubebuilder:rbac:groups=fleet.kargo-fleet.io,resources=fleetstages,verbs=get;list;watch
// +kubebuilder:rbac:groups=fleet.kargo-fleet.io,resources=fleetstages/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=fleet.kargo-fleet.io,resources=fleetrollouts,verbs=get;list;watch
// +kubebuilder:rbac:groups=kargo.akuity.io,resources=stages,verbs=get;list;watch;promote
// +kubebuilder:rbac:groups=kargo.akuity.io,resources=promotions,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
type Reconciler struct {
	client   client.Client
	clock    clock.PassiveClock
	recorder events.EventRecorder
	// writes paces the status writes.
	writes writeTimes
	// drift remembers drifts seen and reverts made.
	drift driftMemory
	// records reads the FleetStages' Stage records.
	records *stagerecord.Reader
	// marker marks the drift reverts.
	marker *provenance.Marker
	// apps reads the targets' Argo CD Applications; nil: none are read.
	apps Applications
	// appSeen remembers the Application changes announced.
	appSeen appMemory
}

var _ reconcile.Reconciler = &Reconciler{}

// NewReconciler returns a version refresh reconciler reading from the
// manager's cache through c and recording drift Events with rec.
func NewReconciler(c client.Client, clk clock.PassiveClock, rec events.EventRecorder) *Reconciler {
	return &Reconciler{client: c, clock: clk, recorder: rec, records: stagerecord.NewReader(c)}
}

// WithStageRecords makes the reconciler read Stage records with records,
// which must read uncached (kargo-fleet does not list or watch ConfigMaps).
func (r *Reconciler) WithStageRecords(records *stagerecord.Reader) *Reconciler {
	r.records = records
	return r
}

// WithMarker makes the reconciler mark the drift reverts it creates, so the
// target guard tells them from Promotions others made with the same labels.
func (r *Reconciler) WithMarker(m *provenance.Marker) *Reconciler {
	r.marker = m
	return r
}

// notRecordedRetry is how soon a FleetStage whose Stages are not recorded
// yet is looked at again.
const notRecordedRetry = 5 * time.Second

// SetupWithManager registers the reconciler: it reacts to owned target
// Stages that start running other Freight, and to FleetStages whose
// intended Freight, open rollout or drift policy changed.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	b := ctrl.NewControllerManagedBy(mgr).
		Named("fleetstage_versions").
		Watches(&kargo.Stage{}, versionChangeHandler{delay: versionRefreshDelay}).
		Watches(&fleetv1alpha1.FleetStage{}, &handler.EnqueueRequestForObject{},
			builder.WithPredicates(intentChangedPredicate())).
		WithOptions(controller.Options{MaxConcurrentReconciles: 1})
	if r.apps != nil {
		b = b.WatchesRawSource(r.apps.Source(r.fleetsOfApplication))
	}
	return b.Complete(r)
}

// versionRefreshDelay is how long a change of the Freight a Stage runs
// waits before the FleetStage is reconciled for its version distribution
// and drift: changes within it are one reconcile. Writes are paced apart
// by versionRefreshInterval.
const versionRefreshDelay = time.Second

// minRefreshInterval is the least time between two status writes of the
// version refresh, whatever the fleet's size.
const minRefreshInterval = 2 * time.Second

// versionChangeHandler queues the owning FleetStage, after a delay, when an
// owned Stage starts running other Freight: only the version distribution
// in the status changes. During a rollout of thousands of targets such
// changes arrive all the time; the delay makes them one refresh every few
// seconds instead of one after another.
type versionChangeHandler struct {
	delay time.Duration
}

func (h versionChangeHandler) Create(context.Context, event.CreateEvent, requestQueue)   {}
func (h versionChangeHandler) Delete(context.Context, event.DeleteEvent, requestQueue)   {}
func (h versionChangeHandler) Generic(context.Context, event.GenericEvent, requestQueue) {}

func (h versionChangeHandler) Update(_ context.Context, e event.UpdateEvent, q requestQueue) {
	o, n := e.ObjectOld.(*kargo.Stage), e.ObjectNew.(*kargo.Stage)
	if slices.Equal(o.CurrentFreightNames(), n.CurrentFreightNames()) {
		return
	}
	owner := metav1.GetControllerOf(n)
	if owner == nil || owner.Kind != "FleetStage" || owner.APIVersion != fleetv1alpha1.GroupVersion.String() {
		return
	}
	q.AddAfter(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: n.Namespace, Name: owner.Name}}, h.delay)
}

type requestQueue = workqueue.TypedRateLimitingInterface[reconcile.Request]

// intentChangedPredicate passes new FleetStages and FleetStage updates that
// change what drift is measured against (last good Freight, current
// rollout, spec), and updates whose Drifted condition disagrees with
// status.drift: another status writer sent the conditions it read before
// the last drift write.
func intentChangedPredicate() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return true },
		DeleteFunc:  func(event.DeleteEvent) bool { return true },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, n := e.ObjectOld.(*fleetv1alpha1.FleetStage), e.ObjectNew.(*fleetv1alpha1.FleetStage)
			drifted := (n.Status.Drift != nil && n.Status.Drift.Count > 0) ||
				(n.Status.Applications != nil && n.Status.Applications.Foreign+n.Status.Applications.Broken > 0)
			// A new Stage record changes which Stages are the fleet's.
			return o.Generation != n.Generation || o.Status.CurrentRollout != n.Status.CurrentRollout ||
				o.Status.StageRecord != n.Status.StageRecord ||
				!reflect.DeepEqual(o.Status.LastGoodFreight, n.Status.LastGoodFreight) ||
				drifted != meta.IsStatusConditionTrue(n.Status.Conditions, fleetv1alpha1.DriftedCondition)
		},
	}
}

// Reconcile brings a FleetStage's version distribution and drift report
// (and their metrics) up to date from the cached target Stages and
// FleetRollouts, writing nothing else, and reverts drifted targets when the
// policy says so.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	// The cache's own object, read only: copying ten thousand inline
	// targets every two seconds to count versions would cost more than the
	// count.
	fs := &fleetv1alpha1.FleetStage{}
	if err := r.client.Get(ctx, req.NamespacedName, fs, client.UnsafeDisableDeepCopy); err != nil {
		if apierrors.IsNotFound(err) {
			r.writes.forget(req.NamespacedName)
			r.drift.forget(req.NamespacedName)
			r.appSeen.forget(req.NamespacedName)
			fleetstatus.ForgetVersions(req.Namespace, req.Name)
			forgetDrift(req.Namespace, req.Name)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !fs.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	interval := versionRefreshInterval(int(fs.Status.Targets.Selected))
	if wait := r.writes.wait(req.NamespacedName, interval, r.clock.Now()); wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	stages := &kargo.StageList{}
	if err := r.client.List(ctx, stages, client.InNamespace(fs.Namespace), client.UnsafeDisableDeepCopy,
		client.MatchingLabels{fleetv1alpha1.FleetStageLabel: fs.Name, fleetv1alpha1.RoleLabel: fleetv1alpha1.RoleTarget}); err != nil {
		return reconcile.Result{}, fmt.Errorf("error listing target Stages of FleetStage %q: %w", fs.Name, err)
	}
	// Only the Stages the FleetStage recorded are its targets: a Stage
	// someone else labelled and pointed at the FleetStage is neither
	// counted nor reverted.
	rec, err := r.records.Read(ctx, fs)
	switch {
	case errors.Is(err, stagerecord.ErrNotRecorded) || errors.Is(err, stagerecord.ErrRefused):
		return reconcile.Result{RequeueAfter: notRecordedRetry}, nil
	case err != nil:
		return reconcile.Result{}, err
	}
	stages.Items, _ = rec.Keep(stages.Items)
	rollouts, err := rolloutstore.List(ctx, r.client, fs.Namespace, fs.Name)
	if err != nil {
		return reconcile.Result{}, err
	}
	// Observe and decide (pure), then apply: reverts, Events, one status
	// write.
	versions := fleetstatus.CountVersions(stages.Items)
	fleetstatus.ObserveVersions(fs.Namespace, fs.Name, versions)
	breakGlass := &kargo.PromotionList{}
	if err := r.client.List(ctx, breakGlass, client.InNamespace(fs.Namespace), client.UnsafeDisableDeepCopy,
		client.MatchingLabels{fleetv1alpha1.BreakGlassLabel: fs.Name}); err != nil {
		return reconcile.Result{}, fmt.Errorf("error listing break-glass Promotions of FleetStage %q: %w", fs.Name, err)
	}
	intent := drift.IntentOf(&fs.Status, rollouts)
	intent.BreakGlass = drift.BreakGlassOf(breakGlass.Items)
	d, err := r.refreshDrift(ctx, fs, intent, stages.Items, breakGlass.Items, anyOpen(rollouts))
	if err != nil {
		return reconcile.Result{}, err
	}
	drifts, appDrifts, appsErr, wait, revertErr := d.drifts, d.apps, d.appsErr, d.wait, d.revertErr

	after := fs.Status.DeepCopy()
	after.Versions = versions
	after.Drift = drift.Status(drifts)
	if appsErr == nil {
		after.Applications = drift.ApplicationStatus(appDrifts)
	}
	drift.SetCondition(&after.Conditions, after.Drift, after.Applications, fs.Generation)
	if held := r.holdVersions(req.NamespacedName, &fs.Status, after); held > 0 {
		return reconcile.Result{RequeueAfter: max(wait, held)}, revertErr
	}
	if !reflect.DeepEqual(&fs.Status, after) {
		// Locked: the change replaces the conditions list, which the
		// FleetStage reconciler writes too; a stale read must not wipe its
		// conditions. A conflict is looked at again shortly.
		err := fleetstatus.PatchLocked(ctx, r.client, fs, &fs.Status, after)
		if apierrors.IsConflict(err) {
			return reconcile.Result{RequeueAfter: 200 * time.Millisecond}, revertErr
		}
		if err != nil {
			return reconcile.Result{}, errors.Join(revertErr,
				fmt.Errorf("error patching the versions and drift of FleetStage %q: %w", fs.Name, err))
		}
		r.writes.wrote(req.NamespacedName, r.clock.Now())
	}
	return reconcile.Result{RequeueAfter: wait}, revertErr
}

// versionWriteSteps is how many writes of the version distribution alone
// a FleetStage's targets moving from one Freight to another make at most
// (beside one every versionWriteMaxWait): however long Kargo takes to
// record each target's Freight, the writes per target stay bounded.
const (
	versionWriteSteps   = 250
	versionWriteMaxWait = 30 * time.Second
)

// holdVersions returns how long to hold back a status write that changes
// only the version distribution, by fewer targets than one
// versionWriteSteps-th of the fleet, within versionWriteMaxWait of the
// last write; zero when it is written now.
func (r *Reconciler) holdVersions(key types.NamespacedName, before, after *fleetv1alpha1.FleetStageStatus) time.Duration {
	onlyVersions := *before.DeepCopy()
	onlyVersions.Versions = after.Versions
	if !reflect.DeepEqual(&onlyVersions, after) || reflect.DeepEqual(before.Versions, after.Versions) {
		return 0
	}
	total := 0
	for _, v := range after.Versions {
		total += int(v.Targets)
	}
	step := max(1, (total+versionWriteSteps-1)/versionWriteSteps)
	if fleetstatus.VersionsMoved(before.Versions, after.Versions) >= step {
		return 0
	}
	return r.writes.wait(key, versionWriteMaxWait, r.clock.Now())
}

// anyOpen reports whether a rollout is not final.
func anyOpen(rollouts []*fleetv1alpha1.FleetRollout) bool {
	for _, ro := range rollouts {
		if !ro.Status.Phase.IsFinal() && ro.DeletionTimestamp == nil {
			return true
		}
	}
	return false
}

// versionRefreshInterval is the least time between two writes of a
// FleetStage's version distribution: 2 ms per target, at least 2 s and at
// most 20 s (from 10,000 targets). Every refresh walks every target Stage
// and every status write sends the whole FleetStage to every watcher (a
// fleet of inline targets is megabytes): an interval that grows with the
// fleet keeps that cost per target flat while a large fleet's rollout
// runs for minutes.
func versionRefreshInterval(targets int) time.Duration {
	return min(max(time.Duration(targets)*2*time.Millisecond, minRefreshInterval), 20*time.Second)
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

// refreshed is what refreshDrift found and did.
type refreshed struct {
	// drifts are the target Stages running other Freight; apps what the
	// targets' Applications show, unknown when appsErr is set.
	drifts    []drift.Drift
	apps      []drift.ApplicationDrift
	appsErr   error
	wait      time.Duration
	revertErr error
}

// refreshDrift detects the drifted target Stages and what the targets'
// Applications show, announces what is new, reverts under the Revert
// policy and describes the target Stages. An error reading the
// Applications leaves their report as it was (refreshed.appsErr); only a
// failed description write is an error.
func (r *Reconciler) refreshDrift(ctx context.Context, fs *fleetv1alpha1.FleetStage, intent drift.Intent, stages []kargo.Stage,
	breakGlass []kargo.Promotion, rolloutOpen bool) (refreshed, error) {
	var out refreshed
	out.drifts = drift.Detect(intent, drift.TargetsOf(stages))
	observeDrift(fs.Namespace, fs.Name, len(out.drifts))
	out.apps, out.appsErr = r.observeApplications(ctx, fs, stages, breakGlass)
	if out.appsErr != nil {
		// What the Applications show is unknown for now: the Stages'
		// drift and the versions are refreshed all the same, and the
		// Applications' report stays as it was until they can be read.
		log.FromContext(ctx).Info("Argo CD Applications not read; looking again shortly", "error", out.appsErr.Error())
	}
	// A foreign change of a target's Application is reverted like a target
	// Stage running other Freight: by promoting the intended Freight again.
	reverts := append(slices.Clip(out.drifts), drift.Reverts(out.apps, intent.Freight)...)
	fresh, cleared, attempts := r.drift.observe(client.ObjectKeyFromObject(fs), reverts, r.clock.Now(), out.appsErr != nil)
	r.announce(fs, fresh)
	out.wait, out.revertErr = r.revert(ctx, fs, rolloutOpen, reverts, cleared, attempts)
	var more bool
	if out.appsErr == nil {
		var err error
		if more, err = r.publishApplications(ctx, fs, stages, out.apps); err != nil {
			return out, errors.Join(out.revertErr, err)
		}
	}
	switch {
	case more && (out.wait <= 0 || out.wait > time.Second):
		out.wait = time.Second
	case out.appsErr != nil && (out.wait <= 0 || out.wait > applicationsRetry):
		out.wait = applicationsRetry
	}
	return out, nil
}
