package fleetstages

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/fleetstage/controller/fleetplan"
	"github.com/kargo-fleet/kargo-fleet/fleetstage/controller/fleetstatus"
	"github.com/kargo-fleet/kargo-fleet/internal/inventory"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
	"github.com/kargo-fleet/kargo-fleet/internal/render"
	"github.com/kargo-fleet/kargo-fleet/internal/stagerecord"
)

// +kubebuilder:rbac:groups=fleet.kargo-fleet.io,resources=fleetstages,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=fleet.kargo-fleet.io,resources=fleetstages/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=fleet.kargo-fleet.io,resources=fleetstages/finalizers,verbs=update
// +kubebuilder:rbac:groups=kargo.akuity.io,resources=stages,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=kargo.akuity.io,resources=promotions,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// FleetStageReconciler expands FleetStages into wave and target Stages.
type FleetStageReconciler struct {
	// StepServerURL, when set, is where wave Stages' fleet-wave task reaches
	// the step server (default: the task's in-cluster Service URL).
	StepServerURL string
	// StepServerShardURLs maps a Kargo shard to the step server URL its
	// Kargo controller uses (docs/shards.md).
	StepServerShardURLs map[string]string

	client    client.Client
	inventory fleetplan.Inventory
	kinds     inventory.Kinds // the inventory kinds watched
	recorder  events.EventRecorder
	clock     clock.PassiveClock
	records   *stagerecord.Reader
	// createdHere holds the UIDs of Stages this process created and has not
	// yet seen in a record: a reconcile that reads the FleetStage from a
	// cache older than its own last status write must not take the Stage it
	// just created for a forged one.
	createdHere sync.Map
	// replaced holds the Stage records newer ones replaced, deleted once
	// the status names the newer one.
	replaced replacedRecords
	// desired is what the last sync rendered, for the per-Stage restore.
	desired *desiredStages
	// guard, when set, puts a FleetStage's Stages in the Promotion
	// admission guard's scope before any of them is generated.
	guard GuardScope
}

// GuardScope is the admission guard's scope (targetguard.GuardScope).
type GuardScope interface {
	// Ensure makes the Promotion admission guard see the Promotions of
	// fs's Stages.
	Ensure(ctx context.Context, fs *fleetv1alpha1.FleetStage) error
}

// WithGuardScope makes the reconciler put each FleetStage's Stages in g
// before it generates them.
func (r *FleetStageReconciler) WithGuardScope(g GuardScope) *FleetStageReconciler {
	r.guard = g
	return r
}

var _ reconcile.Reconciler = &FleetStageReconciler{}

// NewFleetStageReconciler returns a reconciler using c for every read and
// write.
func NewFleetStageReconciler(c client.Client, inv fleetplan.Inventory, rec events.EventRecorder, clk clock.PassiveClock) *FleetStageReconciler {
	return &FleetStageReconciler{client: c, inventory: inv, kinds: inventory.DefaultKinds(), recorder: rec, clock: clk,
		records: stagerecord.NewReader(c), desired: newDesiredStages()}
}

// WithStageRecords makes the reconciler read Stage records with records,
// which must read uncached (kargo-fleet does not list or watch ConfigMaps)
// and may be shared with the other readers of records.
func (r *FleetStageReconciler) WithStageRecords(records *stagerecord.Reader) *FleetStageReconciler {
	r.records = records
	return r
}

// scope carries what one reconcile learns, phase by phase.
type scope struct {
	fs      *fleetv1alpha1.FleetStage
	base    render.BaseStage
	plan    *plan.WavePlan
	desired render.Output
	sync    syncResult
	stages  []kargo.Stage // generated Stages as listed before this reconcile wrote
}

// Reconcile brings one FleetStage's generated Stages and status in step.
func (r *FleetStageReconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, retErr error) {
	log := ctrl.LoggerFrom(ctx)
	fs := &fleetv1alpha1.FleetStage{}
	if err := r.client.Get(ctx, req.NamespacedName, fs); err != nil {
		if apierrors.IsNotFound(err) {
			r.desired.forget(req.NamespacedName)
			forgetPlans(req.Namespace, req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !fs.DeletionTimestamp.IsZero() {
		r.desired.forget(req.NamespacedName)
		r.replaced.forget(fs.UID)
		return ctrl.Result{}, r.finalize(ctx, fs)
	}
	if !controllerutil.ContainsFinalizer(fs, fleetv1alpha1.FleetStageFinalizer) {
		patch := client.MergeFrom(fs.DeepCopy())
		controllerutil.AddFinalizer(fs, fleetv1alpha1.FleetStageFinalizer)
		if err := r.client.Patch(ctx, fs, patch); err != nil {
			return ctrl.Result{}, fmt.Errorf("error adding finalizer to FleetStage %q: %w", fs.Name, err)
		}
	}

	before := fs.Status.DeepCopy()
	s := &scope{fs: fs}
	defer func() {
		if err := r.patchStatus(ctx, fs, before, retErr == nil); err != nil {
			retErr = errors.Join(retErr, err)
			return
		}
		if err := r.collectRecords(ctx, fs); err != nil {
			log.Error(err, "Deleting replaced Stage records failed; trying again at the next reconcile", "FleetStage", klog.KObj(fs))
		}
	}()

	phases := []func(context.Context, *scope) (bool, error){
		r.resolveBase,
		r.resolveTargets,
		r.guardStages,
		r.syncStages,
		r.recordStages,
		r.repointDownstream,
		r.describeAdopted,
		r.summarise,
	}
	for _, phase := range phases {
		cont, err := phase(ctx, s)
		if err != nil {
			log.Error(err, "Reconciling FleetStage failed", "FleetStage", klog.KObj(fs))
			return ctrl.Result{}, err
		}
		if !cont {
			break
		}
	}
	if s.sync.waitingForPrune > 0 {
		// Promotions are watched, but a Promotion that finished while the
		// Stage was being marked may have been missed: look again soon.
		return ctrl.Result{RequeueAfter: 30 * time.Second}, nil
	}
	return ctrl.Result{}, nil
}

// resolveBase finds the Stage being expanded.
func (r *FleetStageReconciler) resolveBase(ctx context.Context, s *scope) (bool, error) {
	fs := s.fs
	if fs.Spec.Stage.Inline != nil {
		base, err := render.BaseFromInline(fs.Spec.Stage.Inline)
		if err != nil {
			setNotReady(fs, fleetv1alpha1.StagesSyncedCondition, fleetv1alpha1.InvalidSpecReason, err.Error())
			return false, nil
		}
		s.base = base
		return true, nil
	}
	stage := &kargo.Stage{}
	err := r.client.Get(ctx, client.ObjectKey{Namespace: fs.Namespace, Name: fs.Spec.Stage.FromStage}, stage)
	if apierrors.IsNotFound(err) {
		setNotReady(fs, fleetv1alpha1.StagesSyncedCondition, fleetv1alpha1.StageSourceNotFoundReason,
			fmt.Sprintf("Stage %q named by spec.stage.fromStage does not exist in Project %q", fs.Spec.Stage.FromStage, fs.Namespace))
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("error getting Stage %q: %w", fs.Spec.Stage.FromStage, err)
	}
	if stage.Labels[fleetv1alpha1.FleetStageLabel] != "" {
		setNotReady(fs, fleetv1alpha1.StagesSyncedCondition, fleetv1alpha1.InvalidSpecReason,
			fmt.Sprintf("spec.stage.fromStage: Stage %q is generated by FleetStage %q and cannot be adopted",
				stage.Name, stage.Labels[fleetv1alpha1.FleetStageLabel]))
		return false, nil
	}
	s.base = render.BaseFromStage(stage)
	return true, nil
}

// resolveTargets reads the inventory and plans the waves.
func (r *FleetStageReconciler) resolveTargets(ctx context.Context, s *scope) (bool, error) {
	fs := s.fs
	countPlan(fs.Namespace, fs.Name)
	fp, err := fleetplan.Plan(ctx, r.client, r.inventory, fs)
	var pe *fleetplan.Error
	switch {
	case errors.As(err, &pe):
		setNotReady(fs, fleetv1alpha1.TargetsResolvedCondition, pe.Reason, pe.Error())
		if pe.Reason == fleetv1alpha1.SourceUnavailableReason && !meta.IsNoMatchError(err) {
			// Transient: try again with backoff. A kind the cluster does not
			// serve is no error to retry: the FleetStage is queued again when
			// the kind appears (optionalWatches).
			return false, err
		}
		return false, nil
	case err != nil:
		return false, err
	}
	s.plan = fp.Plan
	setTargetsResolved(fs, s.plan)
	s.desired = render.Stages(render.Input{FleetStage: fs, Base: s.base, Plan: s.plan, StepServerURL: r.StepServerURL,
		StepServerURLs: r.StepServerShardURLs})
	return true, nil
}

// guardStages puts the FleetStage's Stages in the Promotion admission
// guard's scope: the guard must see a Stage's Promotions from the moment it
// exists.
func (r *FleetStageReconciler) guardStages(ctx context.Context, s *scope) (bool, error) {
	if r.guard == nil {
		return true, nil
	}
	if err := r.guard.Ensure(ctx, s.fs); err != nil {
		return false, err
	}
	return true, nil
}

// patchStatus writes the status when it changed. observedGeneration moves
// only when the reconcile succeeded.
func (r *FleetStageReconciler) patchStatus(ctx context.Context, fs *fleetv1alpha1.FleetStage, before *fleetv1alpha1.FleetStageStatus, ok bool) error {
	if ok {
		fs.Status.ObservedGeneration = fs.Generation
	}
	setReady(fs)
	if statusEqual(before, &fs.Status) {
		return nil
	}
	if err := fleetstatus.Patch(ctx, r.client, fs, before, &fs.Status); err != nil {
		return fmt.Errorf("error patching status of FleetStage %q: %w", fs.Name, err)
	}
	return nil
}

func setNotReady(fs *fleetv1alpha1.FleetStage, condType, reason, message string) {
	meta.SetStatusCondition(&fs.Status.Conditions, metav1.Condition{
		Type: condType, Status: metav1.ConditionFalse, Reason: reason,
		Message: truncate(message), ObservedGeneration: fs.Generation,
	})
}
