package kargosim

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// soonRequeue is how soon Kargo looks at a Stage again when a Promotion is
// queued behind one that just finished.
const soonRequeue = 100 * time.Millisecond

func (s *Simulator) setupStageController(mgr ctrl.Manager) error {
	// Stages are reconciled on spec changes and annotation changes
	// (refresh), not on their own status writes; Promotions and Freight
	// changes bring them back. ProjectConfig changes are not watched: as on
	// Kargo, they take effect at the next resync or refresh.
	stagePred := predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{})
	if err := indexStagesByUpstream(mgr); err != nil {
		return fmt.Errorf("error indexing Stages by upstream Stage: %w", err)
	}
	for _, shard := range s.controllerShards() {
		if err := s.setupShardStageController(mgr, shard, stagePred); err != nil {
			return err
		}
	}
	return nil
}

// setupShardStageController sets up the simulated Stage controller of one
// shard.
func (s *Simulator) setupShardStageController(mgr ctrl.Manager, shard string, stagePred predicate.Predicate) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named(controllerName("kargo_simulator_stages", shard)).
		For(&kargo.Stage{}, builder.WithPredicates(stagePred, inShard(shard))).
		Watches(&kargo.Promotion{}, handler.EnqueueRequestsFromMapFunc(
			func(_ context.Context, o client.Object) []reconcile.Request {
				p, ok := o.(*kargo.Promotion)
				if !ok || p.Spec.Stage == "" {
					return nil
				}
				return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: p.Namespace, Name: p.Spec.Stage}}}
			})).
		Watches(&kargo.Freight{}, s.freightEventHandler()).
		WithOptions(controller.Options{MaxConcurrentReconciles: s.opts.MaxConcurrentStageReconciles}).
		Complete(onlyShard[kargo.Stage](s.client, s.shards[shard], s.reconcileStage))
}

// stagesInNamespace lists every Stage of an object's project.
func (s *Simulator) stagesInNamespace(ctx context.Context, o client.Object) []reconcile.Request {
	var list kargo.StageList
	if err := s.client.List(ctx, &list, client.InNamespace(o.GetNamespace()), client.UnsafeDisableDeepCopy); err != nil {
		logger(ctx).Error(err, "Error listing Stages", "namespace", o.GetNamespace())
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, st := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: st.Namespace, Name: st.Name}})
	}
	return reqs
}

func (s *Simulator) reconcileStage(ctx context.Context, req reconcile.Request) (ctrl.Result, error) {
	log := logger(ctx).WithValues("namespace", req.Namespace, "Stage", req.Name)
	ctx = ctrl.LoggerInto(ctx, log)
	start := s.opts.Clock.Now()
	stage, err := s.cachedStage(ctx, req.Namespace, req.Name)
	if err != nil || stage == nil || !stage.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, err
	}
	// A Stage without steps is a control-flow Stage: nothing to promote.
	if stage.Spec.PromotionTemplate == nil || len(stage.Spec.PromotionTemplate.Spec.Steps) == 0 {
		return ctrl.Result{}, nil
	}
	autoEnabled, err := s.autoPromotionEnabledFor(ctx, stage)
	if err != nil {
		return ctrl.Result{}, err
	}
	promos, err := s.stagePromotions(ctx, stage, false)
	if err != nil {
		return ctrl.Result{}, err
	}
	freight, err := s.projectFreight(ctx, stage.Namespace)
	if err != nil {
		return ctrl.Result{}, err
	}
	base := stage.DeepCopy()
	st := stageStatus{StageStatus: &stage.Status, generation: stage.Generation, now: s.opts.Clock.Now()}
	f := currentFaults(stage)

	st.verifiedInPending = verifiedInPending(stage, freight)
	pending := st.syncPromotions(stage, promos, autoEnabled)
	s.noteRecorded(stage)
	requeue := st.CurrentPromotion == nil && pending
	s.syncFreight(stage, freight)
	st.now = s.opts.Clock.Now()
	st.assessHealth(f)
	st.verify(f, start, func() string { return string(uuid.NewUUID()) })
	wait := s.markFreightVerified(ctx, stage, freight)
	st.EffectiveAutoPromotionHolds = effectiveHolds(stage, promos, autoEnabled)
	st.AutoPromotionEnabled = autoEnabled
	// Kargo v1.11.2 does not look at a Stage again when a soak ends: a
	// Freight that finished soaking upstream is noticed at the next resync
	// or refresh, so the time left to soak does not shorten the requeue.
	if _, err := s.autoPromote(ctx, stage, promos, freight, autoEnabled); err != nil {
		return ctrl.Result{}, err
	}
	if token, ok := stage.Annotations[kargo.RefreshAnnotation]; ok {
		st.LastHandledRefresh = token
	}
	// As Kargo's Stage reconciler, which records the generation it saw on
	// every reconcile: a Stage no controller reconciles keeps none.
	st.ObservedGeneration = stage.Generation
	if !reflect.DeepEqual(base.Status, stage.Status) {
		// The Stage came from the cache: a status computed from a stale copy
		// is refused (conflict) and computed again from the current one.
		if err := s.client.Status().Patch(ctx, stage, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); apierrors.IsConflict(err) {
			// Computed from a copy older than the Stage: look again once the
			// cache has the current one.
			return ctrl.Result{RequeueAfter: soonRequeue}, nil
		} else if err != nil {
			return ctrl.Result{}, fmt.Errorf("error patching status of Stage %q in namespace %q: %w",
				stage.Name, stage.Namespace, err)
		}
	}
	if requeue {
		return ctrl.Result{RequeueAfter: soonRequeue}, nil
	}
	after := s.opts.StageResync
	if wait > 0 && wait < after {
		after = wait
	}
	return ctrl.Result{RequeueAfter: after}, nil
}

// noteRecorded remembers when the Stage's last Promotion, if it succeeded,
// was first seen recorded.
func (s *Simulator) noteRecorded(stage *kargo.Stage) {
	if lp := stage.Status.LastPromotion; lp != nil && lp.Status != nil && lp.Status.Phase == kargo.PromotionSucceeded {
		s.recorded.LoadOrStore(stage.Namespace+"/"+lp.Name, s.opts.Clock.Now())
	}
}

// promotionStageIndex indexes Promotions by the Stage they promote to.
const promotionStageIndex = "kargosim.spec.stage"

func indexPromotionsByStage(mgr ctrl.Manager) error {
	err := mgr.GetFieldIndexer().IndexField(context.Background(), &kargo.Promotion{}, promotionStageIndex,
		func(o client.Object) []string { return []string{o.(*kargo.Promotion).Spec.Stage} })
	if err != nil {
		return fmt.Errorf("error indexing Promotions by Stage: %w", err)
	}
	return nil
}

// stagePromotions lists the Stage's Promotions from the cache, or with
// fresh from the apiserver (by Kargo's Stage label; the cache has an index).
func (s *Simulator) stagePromotions(ctx context.Context, stage *kargo.Stage, fresh bool) ([]kargo.Promotion, error) {
	var list kargo.PromotionList
	r, opts := client.Reader(s.client), []client.ListOption{client.InNamespace(stage.Namespace)}
	if fresh {
		r = s.reader
		opts = append(opts, client.MatchingLabels{kargo.StageLabel: shortLabelValue(stage.Name)})
	} else {
		opts = append(opts, client.MatchingFields{promotionStageIndex: stage.Name})
	}
	if err := r.List(ctx, &list, opts...); err != nil {
		return nil, fmt.Errorf("failed to list Promotions for Stage %q in namespace %q: %w", stage.Name, stage.Namespace, err)
	}
	out := list.Items[:0]
	for _, p := range list.Items {
		if p.Spec.Stage == stage.Name {
			out = append(out, p)
		}
	}
	return out, nil
}

// syncFreight keeps Freight currentlyIn in line with the Stage's current
// collection, recording the longest completed soak of Freight that leaves.
// The Freight are the cache's (read only); the entries go to the Freight
// status writer, and a stale read only queues an entry that is already
// there.
func (s *Simulator) syncFreight(stage *kargo.Stage, freight []kargo.Freight) {
	current := map[string]bool{}
	if cur := currentCollection(&stage.Status); cur != nil {
		for _, ref := range cur.Items {
			current[ref.Name] = true
		}
	}
	now := s.opts.Clock.Now()
	for i := range freight {
		fr := &freight[i]
		in, wasIn := fr.Status.CurrentlyIn[stage.Name]
		switch {
		case wasIn && !current[fr.Name]:
			if v, ok := fr.Status.VerifiedIn[stage.Name]; ok && in.Since != nil {
				if soak := now.Sub(in.Since.Time); v.LongestSoak == nil || soak > v.LongestSoak.Duration {
					s.freightStatus.set(fr, fieldVerifiedIn, stage.Name, map[string]any{
						"longestSoak": metav1.Duration{Duration: soak},
					})
				}
			}
			s.freightStatus.leave(fr, stage.Name)
		case !wasIn && current[fr.Name]:
			s.freightStatus.set(fr, fieldCurrentlyIn, stage.Name, map[string]any{"since": metav1.Time{Time: now}})
		}
	}
}

// markFreightVerified records verifiedIn for the current Freight once it is
// verified in a healthy Stage, VerifiedInDelay after its Promotion
// finished. It returns how long is left to wait, if anything.
func (s *Simulator) markFreightVerified(ctx context.Context, stage *kargo.Stage, freight []kargo.Freight) time.Duration {
	st := &stage.Status
	cur := currentCollection(st)
	last := lastVerification(cur)
	if st.Health == nil || st.Health.Status != kargo.HealthHealthy || last == nil ||
		last.Phase != kargo.VerificationSuccessful {
		return 0
	}
	now := s.opts.Clock.Now()
	if lp := st.LastPromotion; lp != nil {
		if at, ok := s.recorded.Load(stage.Namespace + "/" + lp.Name); ok {
			if left := at.(time.Time).Add(s.opts.VerifiedInDelay).Sub(now); left > 0 {
				return left
			}
		}
	}
	for _, ref := range cur.Items {
		fr := freightNamed(freight, ref.Name)
		if fr == nil || fr.IsVerifiedIn(stage.Name) {
			continue
		}
		verifiedAt := now
		if last.FinishTime != nil {
			verifiedAt = last.FinishTime.Time
		}
		s.freightStatus.set(fr, fieldVerifiedIn, stage.Name, map[string]any{"verifiedAt": metav1.Time{Time: verifiedAt}})
		logger(ctx).V(2).Info("Marked Freight as verified in Stage", "freight", fr.Name)
	}
	return 0
}

// verifiedInPending reports whether the Stage's current Freight is verified
// in a healthy Stage but not yet marked verifiedIn.
func verifiedInPending(stage *kargo.Stage, freight []kargo.Freight) bool {
	st := &stage.Status
	cur := currentCollection(st)
	last := lastVerification(cur)
	if st.Health == nil || st.Health.Status != kargo.HealthHealthy || last == nil ||
		last.Phase != kargo.VerificationSuccessful {
		return false
	}
	for _, ref := range cur.Items {
		if fr := freightNamed(freight, ref.Name); fr != nil && !fr.IsVerifiedIn(stage.Name) {
			return true
		}
	}
	return false
}

// effectiveHolds are the durable holds overlaid with the newest hold or
// resume intent of Promotions not yet recorded.
func effectiveHolds(stage *kargo.Stage, promos []kargo.Promotion, autoEnabled bool) map[string]kargo.AutoPromotionHold {
	if !autoEnabled {
		return nil
	}
	out := map[string]kargo.AutoPromotionHold{}
	for k, v := range stage.Status.AutoPromotionHolds {
		out[k] = v
	}
	last := stage.Status.LastPromotion
	for _, req := range stage.Spec.RequestedFreight {
		key := req.Origin.Key()
		var newest *kargo.Promotion
		hold := false
		for i := range promos {
			p := &promos[i]
			if p.Status.Phase == kargo.PromotionAborted || (last != nil && strings.Compare(p.Name, last.Name) <= 0) {
				continue
			}
			isHold := p.Annotations[kargo.AutoPromotionHoldAnnotation] == key
			isResume := p.Annotations[kargo.AutoPromotionResumeAnnotation] == key
			if (isHold || isResume) && (newest == nil || p.Name > newest.Name) {
				newest, hold = p, isHold
			}
		}
		switch {
		case newest == nil:
		case hold:
			out[key] = newHold(newest, req.Origin)
		default:
			delete(out, key)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
