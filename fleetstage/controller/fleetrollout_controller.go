package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/fleetstage/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/rollout"
)

// +kubebuilder:rbac:groups=fleet.kargo-fleet.io,resources=fleetrollouts,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups=fleet.kargo-fleet.io,resources=fleetrollouts/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=kargo.akuity.io,resources=promotions,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=kargo.akuity.io,resources=stages,verbs=promote
// +kubebuilder:rbac:groups=kargo.akuity.io,resources=freights,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;create

// statusInterval is the least time between two progress-only status writes
// of one rollout: at 10,000 targets every Promotion finishing would otherwise
// be a write. Phase and wave changes are written at once.
const statusInterval = time.Second

// RefreshFunc asks Kargo to run a Promotion's polling step again now.
type RefreshFunc func(ctx context.Context, c client.Client, namespace, promotion string) error

// FleetRolloutReconciler moves a FleetStage's targets to a Freight wave by
// wave: it creates target Promotions within concurrency, constraints and
// windows, judges them, halts on a breached threshold, and rolls back.
type FleetRolloutReconciler struct {
	client    client.Client
	reader    client.Reader // uncached reads (plan snapshots)
	inventory Inventory
	recorder  events.EventRecorder
	clock     clock.Clock
	refresh   RefreshFunc
	metrics   *rolloutMetrics

	snapshots snapshots
	expected  expectations

	mu        sync.Mutex
	lastWrite map[types.UID]time.Time
}

var _ reconcile.Reconciler = &FleetRolloutReconciler{}

// NewFleetRolloutReconciler returns a FleetRollout reconciler. reader must
// not be cached (plan snapshots are read once, through it); refresh may be nil.
func NewFleetRolloutReconciler(c client.Client, reader client.Reader, inv Inventory, rec events.EventRecorder,
	clk clock.Clock, refresh RefreshFunc) *FleetRolloutReconciler {
	return &FleetRolloutReconciler{client: c, reader: reader, inventory: inv, recorder: rec, clock: clk, refresh: refresh,
		metrics: defaultRolloutMetrics, lastWrite: map[types.UID]time.Time{}}
}

// Reconcile moves one FleetRollout forward.
func (r *FleetRolloutReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	start := r.clock.Now()
	defer func() { r.metrics.reconcileSeconds.Observe(r.clock.Since(start).Seconds()) }()
	log := ctrl.LoggerFrom(ctx)
	ro := &fleetv1alpha1.FleetRollout{}
	if err := r.client.Get(ctx, req.NamespacedName, ro); err != nil {
		if apierrors.IsNotFound(err) {
			r.metrics.forget(req.Namespace, req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !ro.DeletionTimestamp.IsZero() {
		r.snapshots.forget(ro.UID)
		r.expected.clear(ro.UID)
		return ctrl.Result{}, nil
	}
	// The cache's own FleetStage, not a copy (a rollout reconciles many
	// times a second, and a fleet of inline targets is megabytes): nothing
	// below modifies it.
	fs := &fleetv1alpha1.FleetStage{}
	if err := r.client.Get(ctx, client.ObjectKey{Namespace: ro.Namespace, Name: ro.Spec.FleetStage}, fs, client.UnsafeDisableDeepCopy); err != nil {
		if apierrors.IsNotFound(err) && !ro.Status.Phase.IsFinal() {
			return ctrl.Result{}, r.fail(ctx, ro, fmt.Sprintf("FleetStage %q does not exist", ro.Spec.FleetStage))
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if ro.Status.Phase.IsFinal() {
		// A final rollout may still owe its follow-ups if the controller died
		// right after recording the final phase: both are idempotent and
		// write nothing once done.
		r.metrics.observe(ro)
		return ctrl.Result{}, r.settle(ctx, ro, fs)
	}
	if waiting, err := r.waitTurn(ctx, ro, fs); err != nil || waiting {
		return ctrl.Result{}, err
	}
	snap, err := r.ensureSnapshot(ctx, ro, fs)
	if err != nil {
		return ctrl.Result{}, err
	}
	obs, err := r.observe(ctx, ro, fs, snap)
	if err != nil {
		return ctrl.Result{}, err
	}
	d := rollout.Decide(obs.Observation)
	log.V(2).Info("Decided", "FleetRollout", klog.KObj(ro), "phase", d.Phase, "start", len(d.Start), "abort", len(d.Abort))

	var errs []error
	retry := time.Duration(0)
	if err := r.abort(ctx, ro, d.Abort); err != nil {
		errs = append(errs, err)
	}
	starts := d.Start
	if len(starts) > maxStartsPerReconcile {
		starts = starts[:maxStartsPerReconcile]
		retry = time.Millisecond // come back at once for the rest
	}
	if n, err := r.startTargets(ctx, ro, fs, starts); err != nil {
		errs = append(errs, err)
	} else if n > 0 {
		retry = max(retry, 250*time.Millisecond)
	}
	if d.Rollback {
		if err := r.ensureRollback(ctx, ro, fs); err != nil {
			errs = append(errs, err)
		}
	}
	written, err := r.writeStatus(ctx, ro, fs, obs, &d)
	if err != nil {
		errs = append(errs, err)
	}
	if written {
		if err := r.recordOnFleetStage(ctx, ro, fs); err != nil {
			errs = append(errs, err)
		}
	}
	r.metrics.observe(ro)
	if len(errs) > 0 {
		return ctrl.Result{}, errors.Join(errs...)
	}
	res := ctrl.Result{}
	if !d.RequeueAt.IsZero() {
		res.RequeueAfter = max(d.RequeueAt.Sub(r.clock.Now()), 100*time.Millisecond)
	}
	if !written {
		// A progress-only change was held back to coalesce writes.
		res.RequeueAfter = minPositive(res.RequeueAfter, statusInterval)
	}
	res.RequeueAfter = minPositive(res.RequeueAfter, retry)
	return res, nil
}

// waitTurn applies the newer-Freight policy. Forward rollouts of one
// FleetStage run one at a time, oldest first. With policy Queue a newer one
// waits; with Supersede the older ones are marked Superseded (no new target
// starts for them; their in-flight Promotions finish) and the newest runs.
// A rollback never waits: it is how the fleet gets out of trouble.
func (r *FleetRolloutReconciler) waitTurn(ctx context.Context, ro *fleetv1alpha1.FleetRollout, fs *fleetv1alpha1.FleetStage) (bool, error) {
	if ro.Spec.Direction == fleetv1alpha1.DirectionRollback {
		return false, nil
	}
	list := &fleetv1alpha1.FleetRolloutList{}
	if err := r.client.List(ctx, list, client.InNamespace(ro.Namespace),
		client.MatchingLabels{fleetv1alpha1.FleetStageLabel: fs.Name}); err != nil {
		return false, fmt.Errorf("error listing FleetRollouts: %w", err)
	}
	var older, newer []*fleetv1alpha1.FleetRollout
	for i := range list.Items {
		o := &list.Items[i]
		if o.UID == ro.UID || o.Spec.Direction != fleetv1alpha1.DirectionForward || o.Status.Phase.IsFinal() {
			continue
		}
		if o.CreationTimestamp.Before(&ro.CreationTimestamp) ||
			(o.CreationTimestamp.Equal(&ro.CreationTimestamp) && o.Name < ro.Name) {
			older = append(older, o)
		} else {
			newer = append(newer, o)
		}
	}
	if fs.Spec.Policy.NewerFreight == fleetv1alpha1.SupersedeReplace {
		if len(newer) > 0 {
			return true, r.supersede(ctx, ro, newer[len(newer)-1])
		}
		for _, o := range older {
			if err := r.supersede(ctx, o, ro); err != nil {
				return true, err
			}
		}
		return false, nil
	}
	if len(older) == 0 {
		return false, nil
	}
	slices.SortFunc(older, func(a, b *fleetv1alpha1.FleetRollout) int {
		return a.CreationTimestamp.Compare(b.CreationTimestamp.Time)
	})
	msg := fmt.Sprintf("queued behind FleetRollout %s (Freight %s): newer Freight waits for the running rollout (spec.policy.newerFreight: Queue)",
		older[0].Name, older[0].Spec.Freight.Name)
	if ro.Status.Message == msg && ro.Status.Phase == fleetv1alpha1.RolloutPending {
		return true, nil
	}
	patch := client.MergeFrom(ro.DeepCopy())
	ro.Status.Phase, ro.Status.Message = fleetv1alpha1.RolloutPending, msg
	if err := r.client.Status().Patch(ctx, ro, patch); err != nil {
		return true, fmt.Errorf("error patching status of FleetRollout %q: %w", ro.Name, err)
	}
	return true, nil
}

// settle completes what follows a final phase: the FleetStage's record of
// the rollout and, for a breached rollout under an automatic rollback policy,
// the rollback.
func (r *FleetRolloutReconciler) settle(ctx context.Context, ro *fleetv1alpha1.FleetRollout, fs *fleetv1alpha1.FleetStage) error {
	var errs []error
	if ro.Spec.Direction == fleetv1alpha1.DirectionForward && fs.Spec.Policy.Rollback.Mode == fleetv1alpha1.RollbackAutomatic &&
		meta.IsStatusConditionTrue(ro.Status.Conditions, fleetv1alpha1.ThresholdBreachedCondition) {
		errs = append(errs, r.ensureRollback(ctx, ro, fs))
	}
	errs = append(errs, r.recordOnFleetStage(ctx, ro, fs))
	return errors.Join(errs...)
}

// fail ends a rollout that cannot go on.
func (r *FleetRolloutReconciler) fail(ctx context.Context, ro *fleetv1alpha1.FleetRollout, msg string) error {
	patch := client.MergeFrom(ro.DeepCopy())
	ro.Status.Phase, ro.Status.Message = fleetv1alpha1.RolloutFailed, msg
	now := r.now()
	ro.Status.FinishedAt = &now
	if err := r.client.Status().Patch(ctx, ro, patch); err != nil {
		return fmt.Errorf("error patching status of FleetRollout %q: %w", ro.Name, err)
	}
	r.event(ro, corev1.EventTypeWarning, RolloutFailedReason, "%s", msg)
	return nil
}

// resolvePercent resolves a count or percentage against total, rounding a
// percentage up and never going below 1.
func resolvePercent(v *intstr.IntOrString, total int) int {
	n, err := intstr.GetScaledValueFromIntOrPercent(v, total, true)
	if err != nil || n < 1 {
		return 1
	}
	return n
}

func minPositive(a, b time.Duration) time.Duration {
	switch {
	case a <= 0:
		return b
	case b <= 0:
		return a
	}
	return min(a, b)
}
