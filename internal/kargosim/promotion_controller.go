package kargosim

import (
	"context"
	"crypto/sha1"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// defaultRequeue is how soon a Running Promotion whose step suggested no
// interval is looked at again.
const defaultRequeue = 5 * time.Minute

func (s *Simulator) setupPromotionController(mgr ctrl.Manager) error {
	// A Promotion is reconciled when created, when its annotations change
	// (abort, refresh) and when its Stage makes it the current Promotion;
	// not on its own status writes, so a polling step waits for its
	// interval.
	promoPred := predicate.Funcs{
		CreateFunc: func(event.CreateEvent) bool { return true },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() ||
				!maps.Equal(e.ObjectOld.GetAnnotations(), e.ObjectNew.GetAnnotations())
		},
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
	// One controller per shard, each with its own workers, as Kargo runs
	// one controller process per shard.
	for _, shard := range s.controllerShards() {
		err := ctrl.NewControllerManagedBy(mgr).
			Named(controllerName("kargo_simulator_promotions", shard)).
			For(&kargo.Promotion{}, builder.WithPredicates(promoPred, inShard(shard))).
			Watches(&kargo.Stage{}, handler.Funcs{
				CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
					enqueueCurrent(nil, e.Object, q)
				},
				UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
					enqueueCurrent(e.ObjectOld, e.ObjectNew, q)
				},
			}, builder.WithPredicates(inShard(shard))).
			WithOptions(controller.Options{MaxConcurrentReconciles: s.opts.MaxConcurrentReconciles}).
			Complete(onlyShard[kargo.Promotion](s.client, s.shards[shard], s.reconcilePromotion))
		if err != nil {
			return err
		}
	}
	return nil
}

// enqueueCurrent queues the Stage's current Promotion when the Stage has
// just acknowledged it.
func enqueueCurrent(oldObj, newObj client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	st, ok := newObj.(*kargo.Stage)
	if !ok || st.Status.CurrentPromotion == nil {
		return
	}
	if old, ok := oldObj.(*kargo.Stage); ok && old.Status.CurrentPromotion != nil &&
		old.Status.CurrentPromotion.Name == st.Status.CurrentPromotion.Name {
		return
	}
	q.Add(reconcile.Request{NamespacedName: types.NamespacedName{
		Namespace: st.Namespace, Name: st.Status.CurrentPromotion.Name,
	}})
}

func (s *Simulator) reconcilePromotion(ctx context.Context, req reconcile.Request) (ctrl.Result, error) {
	log := logger(ctx).WithValues("namespace", req.Namespace, "promotion", req.Name)
	ctx = ctrl.LoggerInto(ctx, log)
	promo := &kargo.Promotion{}
	if err := s.reader.Get(ctx, req.NamespacedName, promo); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !promo.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	log = log.WithValues("Stage", promo.Spec.Stage, "freight", promo.Spec.Freight)
	ctx = ctrl.LoggerInto(ctx, log)
	if abort, ok := kargo.AbortRequestOf(promo.Annotations); ok && abort.Action == kargo.AbortTerminate {
		s.polls.Delete(req.String())
		return ctrl.Result{}, s.terminate(ctx, promo, abort)
	}
	if promo.Status.Phase.IsTerminal() {
		s.polls.Delete(req.String())
		return ctrl.Result{}, nil
	}
	// The Promotion is read from the apiserver (its status says which step
	// runs next); its Freight and Stage from the cache, read only.
	freight, err := s.cachedFreight(ctx, promo.Namespace, promo.Spec.Freight)
	if err != nil {
		return ctrl.Result{}, err
	}
	if promo.Status.Phase == "" {
		if err := s.patchPromotionStatus(ctx, promo, func(st *kargo.PromotionStatus) {
			st.Phase = kargo.PromotionPending
		}); err != nil {
			return ctrl.Result{}, err
		}
	}
	stage, err := s.cachedStage(ctx, promo.Namespace, promo.Spec.Stage)
	if err != nil {
		return ctrl.Result{}, err
	}
	if stage == nil {
		return ctrl.Result{}, fmt.Errorf("could not find Stage %q in namespace %q", promo.Spec.Stage, promo.Namespace)
	}
	// Only the Promotion the Stage has acknowledged runs; the Stage watch
	// brings the others back when their turn comes.
	if stage.Status.CurrentPromotion == nil || stage.Status.CurrentPromotion.Name != promo.Name {
		log.V(4).Info("Stage is not awaiting Promotion")
		return ctrl.Result{}, nil
	}
	pollKey := req.String()
	if promo.Status.Phase == kargo.PromotionRunning {
		if left := s.pollLeft(promo, pollKey); left > 0 {
			return ctrl.Result{RequeueAfter: left}, nil
		}
	} else {
		now := s.opts.Clock.Now()
		if err := s.patchPromotionStatus(ctx, promo, func(st *kargo.PromotionStatus) {
			st.Phase = kargo.PromotionRunning
			st.StartedAt = &metav1.Time{Time: now}
		}); err != nil {
			return ctrl.Result{}, err
		}
		log.Info("Began promotion")
	}
	s.polls.Delete(pollKey)
	newStatus, retryAfter, stepErr := s.promote(ctx, promo, stage, freight)
	s.stampStatus(ctx, promo, &newStatus)
	if err := s.writePromotionStatus(ctx, promo, newStatus); err != nil {
		return ctrl.Result{}, err
	}
	if newStatus.Phase != kargo.PromotionRunning {
		return ctrl.Result{}, nil
	}
	if stepErr != nil {
		// A retryable step error: retried at once under the controller's
		// rate limiter, not at the poll interval, as on Kargo.
		return ctrl.Result{}, stepErr
	}
	after := s.requeueInterval(promo, &newStatus, retryAfter)
	s.polls.Store(pollKey, nextPoll{at: s.opts.Clock.Now().Add(after), refresh: promo.Annotations[kargo.RefreshAnnotation]})
	return ctrl.Result{RequeueAfter: after}, nil
}

// stampStatus records in a Promotion's new status when it finished, if it
// did, and the refresh it handled.
func (s *Simulator) stampStatus(ctx context.Context, promo *kargo.Promotion, newStatus *kargo.PromotionStatus) {
	if newStatus.Phase.IsTerminal() {
		newStatus.FinishedAt = &metav1.Time{Time: s.opts.Clock.Now()}
		ctrl.LoggerFrom(ctx).Info("Promotion finished", "phase", newStatus.Phase, "message", newStatus.Message)
	}
	if token, ok := promo.Annotations[kargo.RefreshAnnotation]; ok {
		newStatus.LastHandledRefresh = token
	}
}

// pollLeft is how long until a Running Promotion's step runs again: when
// its poll interval is up or on a refresh, not whenever another event brings
// the Promotion back. Zero or less: now.
func (s *Simulator) pollLeft(promo *kargo.Promotion, pollKey string) time.Duration {
	v, ok := s.polls.Load(pollKey)
	if !ok {
		return 0
	}
	p := v.(nextPoll)
	if p.refresh != promo.Annotations[kargo.RefreshAnnotation] {
		return 0
	}
	return p.at.Sub(s.opts.Clock.Now())
}

// writePromotionStatus writes the Promotion's new status. A status the
// apiserver refuses as invalid errors the Promotion, saying why, rather
// than failing it again on every retry.
func (s *Simulator) writePromotionStatus(ctx context.Context, promo *kargo.Promotion, newStatus kargo.PromotionStatus) error {
	err := s.patchPromotionStatus(ctx, promo, func(st *kargo.PromotionStatus) { *st = newStatus })
	if err != nil && apierrors.IsInvalid(err) {
		msg := fmt.Sprintf("error updating status: %v", err)
		err = s.patchPromotionStatus(ctx, promo, func(st *kargo.PromotionStatus) {
			st.Phase, st.Message = kargo.PromotionErrored, msg
		})
	}
	return err
}

// nextPoll is when a Running Promotion's step runs again, and the refresh
// token it last handled.
type nextPoll struct {
	at      time.Time
	refresh string
}

// promote runs the Promotion's steps and returns its new status.
func (s *Simulator) promote(ctx context.Context, promo *kargo.Promotion, stage *kargo.Stage,
	freight *kargo.Freight) (kargo.PromotionStatus, *time.Duration, error) {
	st := *promo.Status.DeepCopy()
	now := s.opts.Clock.Now()
	if freight == nil {
		st.Phase = kargo.PromotionErrored
		st.Message = fmt.Sprintf("Freight %q not found in namespace %q", promo.Spec.Freight, promo.Namespace)
		return st, nil, nil
	}
	if !freightAvailable(stage, freight, now) {
		st.Phase = kargo.PromotionErrored
		st.Message = fmt.Sprintf("Freight %q is not available to Stage %q in namespace %q",
			promo.Spec.Freight, stage.Name, promo.Namespace)
		return st, nil, nil
	}
	ref := kargo.FreightReference{Name: freight.Name, Origin: freight.Origin}
	st.Freight = &ref
	st.FreightCollection = targetCollection(stage, ref)
	state := map[string]any{}
	if st.State != nil && len(st.State.Raw) > 0 {
		if err := json.Unmarshal(st.State.Raw, &state); err != nil {
			st.Phase, st.Message = kargo.PromotionErrored, fmt.Sprintf("error reading Promotion state: %v", err)
			return st, nil, nil
		}
	}
	pc := &promoContext{
		project:      promo.Namespace,
		stage:        stage.Name,
		promotion:    promo.Name,
		actor:        kargo.PromotionActor(promo.Annotations[kargo.CreateActorAnnotation]),
		rollback:     promo.Annotations[kargo.RollbackAnnotation] == "true",
		freight:      ref,
		freightAlias: freight.Alias,
		vars:         promo.Spec.Vars,
		metas:        st.StepExecutionMetadata,
		state:        state,
		data:         s,
		faults:       faultsFor(stage, ref.Name, freight.Alias),
	}
	res := s.engine.execute(ctx, pc, promo.Spec.Steps, st.CurrentStep, now)
	st.Phase, st.Message, st.CurrentStep = res.phase, res.message, res.currentStep
	st.StepExecutionMetadata = pc.metas
	raw, err := json.Marshal(pc.state)
	if err != nil {
		st.Phase, st.Message = kargo.PromotionErrored, fmt.Sprintf("error recording Promotion state: %v", err)
		return st, nil, nil
	}
	st.State = &apiextensionsv1.JSON{Raw: raw}
	if res.err != nil {
		st.Message = res.err.Error()
		logger(ctx).Error(res.err, "Error executing Promotion")
	}
	return st, res.retryAfter, res.err
}

// targetCollection is the Freight the Stage will hold after the Promotion:
// what its last Promotion left for its other requested origins, plus the
// target Freight.
func targetCollection(stage *kargo.Stage, target kargo.FreightReference) *kargo.FreightCollection {
	items := map[string]kargo.FreightReference{}
	if last := stage.Status.LastPromotion; len(stage.Spec.RequestedFreight) > 1 && last != nil &&
		last.Status != nil && last.Status.FreightCollection != nil {
		for _, req := range stage.Spec.RequestedFreight {
			if f, ok := last.Status.FreightCollection.Items[req.Origin.Key()]; ok {
				items[req.Origin.Key()] = f
			}
		}
	}
	items[target.Origin.Key()] = target
	return &kargo.FreightCollection{ID: collectionID(items), Items: items}
}

// collectionID identifies a set of Freight by their sorted names.
func collectionID(items map[string]kargo.FreightReference) string {
	names := make([]string, 0, len(items))
	for _, f := range items {
		names = append(names, f.Name)
	}
	slices.Sort(names)
	return fmt.Sprintf("%x", sha1.Sum([]byte(strings.Join(names, ","))))
}

// requeueInterval is when a Running Promotion's step runs again: the
// step's suggestion (default 5 min) but never below the poll floor, and no
// later than the step's timeout.
func (s *Simulator) requeueInterval(promo *kargo.Promotion, st *kargo.PromotionStatus, suggested *time.Duration) time.Duration {
	interval := defaultRequeue
	if suggested != nil {
		interval = max(*suggested, s.opts.PollFloor)
	}
	i := int(st.CurrentStep)
	if i >= len(promo.Spec.Steps) || i >= len(st.StepExecutionMetadata) || st.StepExecutionMetadata[i].StartedAt == nil {
		return interval
	}
	step := promo.Spec.Steps[i]
	timeout := stepTimeout(step, s.engine.kinds[step.Uses].defaultTimeout)
	if timeout == 0 {
		return interval
	}
	deadline := st.StepExecutionMetadata[i].StartedAt.Add(timeout)
	if left := deadline.Sub(s.opts.Clock.Now()); left < interval {
		// Just past the deadline, so that the step is judged timed out.
		return max(left, 0) + 10*time.Millisecond
	}
	return interval
}

// terminate aborts a Pending or Running Promotion on request.
func (s *Simulator) terminate(ctx context.Context, promo *kargo.Promotion, abort *kargo.AbortRequest) error {
	if promo.Status.Phase.IsTerminal() {
		return nil
	}
	now := &metav1.Time{Time: s.opts.Clock.Now()}
	actor := abort.Actor
	err := s.patchPromotionStatus(ctx, promo, func(st *kargo.PromotionStatus) {
		i := int(st.CurrentStep)
		if st.Phase == kargo.PromotionRunning && len(st.StepExecutionMetadata) == i+1 &&
			st.StepExecutionMetadata[i].Status == kargo.StepRunning {
			st.StepExecutionMetadata[i].Status = kargo.StepAborted
			st.StepExecutionMetadata[i].FinishedAt = now
		}
		st.Phase = kargo.PromotionAborted
		st.Message = "Promotion terminated per user request"
		if actor != "" {
			st.Message = "Promotion terminated by " + actor
		}
		st.FinishedAt = now
	})
	if err == nil {
		logger(ctx).Info("Terminated promotion", "actor", actor)
	}
	return err
}

// patchPromotionStatus applies a change to the Promotion's status with a
// merge patch, so fields the mirror does not know survive.
func (s *Simulator) patchPromotionStatus(ctx context.Context, promo *kargo.Promotion, change func(*kargo.PromotionStatus)) error {
	base := promo.DeepCopy()
	change(&promo.Status)
	if err := s.client.Status().Patch(ctx, promo, client.MergeFrom(base)); err != nil {
		return fmt.Errorf("error patching status of Promotion %q in namespace %q: %w", promo.Name, promo.Namespace, err)
	}
	return nil
}
