package targetguard

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/render"
)

// +kubebuilder:rbac:groups=fleet.kargo-fleet.io,resources=fleetstages,verbs=get;list;watch

// PromotionGuardWebhookSuffix ends the names of the chart's webhooks for
// Kargo Promotions, whose match condition GuardScope keeps.
const PromotionGuardWebhookSuffix = "promotions.fleet.kargo-fleet.io"

// GuardScope keeps the admission guard for Kargo Promotions to the fleets'
// own Stages: it writes a match condition (render.PromotionGuardCondition)
// onto the Promotion webhooks of the release's ValidatingWebhookConfiguration,
// so the API server calls kargo-fleet only for Promotions into a template,
// wave or target Stage of a FleetStage. Every other Promotion of a fleet's
// Project (its dev and staging Stages) is admitted without kargo-fleet,
// whether it is up or down.
//
// The condition only ever narrows what the chart registers (every Promotion
// of a labelled namespace): before the controller first writes it, and
// whenever someone removes it, the guard sees every Promotion of a fleet's
// Project. A FleetStage's Stages enter the condition before they are
// generated (Ensure, called by the FleetStage reconciler) and leave it with
// the FleetStage object, after its finalizer deleted them.
type GuardScope struct {
	cache  client.Reader
	api    client.Reader
	writer client.Writer
	name   string

	// syncing serializes writes: a write computed from an older list of
	// FleetStages must not land after one that includes a newer FleetStage.
	syncing sync.Mutex
	mu      sync.Mutex
	// written is what the condition guarded when this process last read or
	// wrote it, by namespace and FleetStage; nil before the first.
	written map[types.NamespacedName]render.GuardedStages
}

var _ reconcile.Reconciler = &GuardScope{}

// scopeKey is the one request the scope reconciles.
var scopeKey = reconcile.Request{NamespacedName: types.NamespacedName{Name: "promotion-guard-scope"}}

// NewGuardScope returns a scope that lists FleetStages from cache, reads
// the ValidatingWebhookConfiguration named name with api (uncached: the
// controller neither lists nor watches webhook configurations) and writes
// it with w. An empty name keeps no condition (the guard sees every
// Promotion of a fleet Project, as the chart registers it).
func NewGuardScope(cache, api client.Reader, w client.Writer, name string) *GuardScope {
	return &GuardScope{cache: cache, api: api, writer: w, name: name}
}

// SetupWithManager registers the scope: on every FleetStage created,
// deleted, or changed in its waves or template, and at start.
func (s *GuardScope) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	one := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{scopeKey}
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("promotion-guard-scope").
		WatchesRawSource(source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
			q.Add(scopeKey)
			return nil
		})).
		Watches(&fleetv1alpha1.FleetStage{}, one, builder.WithPredicates(predicate.Funcs{
			UpdateFunc: func(e event.UpdateEvent) bool {
				o, n := e.ObjectOld.(*fleetv1alpha1.FleetStage), e.ObjectNew.(*fleetv1alpha1.FleetStage)
				return !slices.Equal(render.FleetGuardedStages(o).Names, render.FleetGuardedStages(n).Names)
			},
		})).
		WithOptions(opts).
		Complete(s)
}

// scopeResync is how often the condition is checked anyway: a Helm upgrade
// or a GitOps sync of the chart may have written the webhooks without it.
const scopeResync = 5 * time.Minute

// Reconcile writes the condition for the FleetStages that exist.
func (s *GuardScope) Reconcile(ctx context.Context, _ ctrl.Request) (ctrl.Result, error) {
	if err := s.sync(ctx); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: scopeResync}, nil
}

// Ensure makes sure the condition covers fs's Stages before the FleetStage
// reconciler generates them: a write when this process has not seen it
// covered.
func (s *GuardScope) Ensure(ctx context.Context, fs *fleetv1alpha1.FleetStage) error {
	if s == nil || s.name == "" {
		return nil
	}
	want := render.FleetGuardedStages(fs)
	s.mu.Lock()
	covered := s.written != nil && s.written[types.NamespacedName{Namespace: fs.Namespace, Name: fs.Name}].Covers(want)
	s.mu.Unlock()
	if covered {
		return nil
	}
	return s.sync(ctx, fs)
}

// sync computes the condition from the FleetStages in the cache, plus
// extra ones the cache may not show yet, and writes it onto the Promotion
// webhooks when it differs.
func (s *GuardScope) sync(ctx context.Context, extra ...*fleetv1alpha1.FleetStage) error {
	if s.name == "" {
		return nil
	}
	s.syncing.Lock()
	defer s.syncing.Unlock()
	fleets := &fleetv1alpha1.FleetStageList{}
	if err := s.cache.List(ctx, fleets, client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("error listing FleetStages: %w", err)
	}
	guarded := map[types.NamespacedName]render.GuardedStages{}
	for i := range fleets.Items {
		fs := &fleets.Items[i]
		guarded[client.ObjectKeyFromObject(fs)] = render.FleetGuardedStages(fs)
	}
	for _, fs := range extra {
		key := client.ObjectKeyFromObject(fs)
		g := render.FleetGuardedStages(fs)
		if cur, ok := guarded[key]; ok {
			g.Names = mergeSorted(cur.Names, g.Names)
		}
		guarded[key] = g
	}
	list := make([]render.GuardedStages, 0, len(guarded))
	for _, g := range guarded {
		list = append(list, g)
	}
	cond := render.PromotionGuardCondition(list)

	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := s.api.Get(ctx, types.NamespacedName{Name: s.name}, vwc); err != nil {
		if apierrors.IsNotFound(err) {
			// No webhooks: nothing to narrow, nothing calls the guard.
			s.remember(guarded)
			return nil
		}
		return fmt.Errorf("error getting ValidatingWebhookConfiguration %q: %w", s.name, err)
	}
	changed := false
	for i := range vwc.Webhooks {
		w := &vwc.Webhooks[i]
		if !strings.HasSuffix(w.Name, PromotionGuardWebhookSuffix) {
			continue
		}
		if next := withCondition(w.MatchConditions, cond); !slices.Equal(next, w.MatchConditions) {
			w.MatchConditions, changed = next, true
		}
	}
	if changed {
		if err := s.writer.Update(ctx, vwc); err != nil {
			return fmt.Errorf("error writing the fleet Stages into the match conditions of ValidatingWebhookConfiguration %q: %w",
				s.name, err)
		}
		log.FromContext(ctx).Info("Narrowed the Promotion admission guard to the fleets' Stages",
			"ValidatingWebhookConfiguration", s.name, "fleets", len(list))
	}
	s.remember(guarded)
	return nil
}

func (s *GuardScope) remember(guarded map[types.NamespacedName]render.GuardedStages) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.written = guarded
}

// withCondition returns conds with kargo-fleet's condition set to cond;
// other conditions (an operator's own) stay.
func withCondition(conds []admissionregistrationv1.MatchCondition, cond admissionregistrationv1.MatchCondition) []admissionregistrationv1.MatchCondition {
	out := make([]admissionregistrationv1.MatchCondition, 0, len(conds)+1)
	for _, c := range conds {
		if c.Name != cond.Name {
			out = append(out, c)
		}
	}
	return append(out, cond)
}

// mergeSorted merges two sorted lists without duplicates.
func mergeSorted(a, b []string) []string {
	out := append(slices.Clone(a), b...)
	slices.Sort(out)
	return slices.Compact(out)
}
