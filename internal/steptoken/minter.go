package steptoken

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

// Minter keeps a step token Secret (v1alpha1.StepTokenSecretName, key
// v1alpha1.StepTokenSecretKey) in every Project namespace that has a
// FleetStage, and deletes it when the last FleetStage goes or the Project's
// tokens are revoked (v1alpha1.StepTokenRevokedAnnotation). It replaces a
// token older than RenewAfter, one the current key did not sign (after a
// rotation), one the revocation refuses, and a deleted or edited Secret, as
// soon as a watch reports it. The shipped ClusterPromotionTasks send the
// token with ${{ secret('kargo-fleet-step-token').token }}.
//
// Token Secrets carry one name in every namespace, so the controller may
// read, update and delete Secrets of that name only (RBAC resourceNames),
// and watches them through a cache selecting that name (RBAC in rbac.go).
type Minter struct {
	client client.Client
	tokens client.Reader
	keys   KeySource
	clock  clock.PassiveClock
}

var _ reconcile.Reconciler = (*Minter)(nil)

// NewMinter returns a Minter. c lists FleetStages and Namespaces
// (the cache is fine) and writes Secrets; tokens reads token Secrets (a
// cache of Secrets named v1alpha1.StepTokenSecretName, or an API reader).
func NewMinter(c client.Client, tokens client.Reader, keys KeySource, clk clock.PassiveClock) *Minter {
	return &Minter{client: c, tokens: tokens, keys: keys, clock: clk}
}

// MinterWatches are the caches whose Secrets the minter watches besides the
// manager's: token Secrets, and the signing key's Secret.
type MinterWatches struct {
	// Tokens caches the Secrets named v1alpha1.StepTokenSecretName.
	Tokens cache.Cache
	// Keys caches the signing key's Secret; nil when the key is a file.
	Keys cache.Cache
}

// SetupWithManager registers the minter; it runs on the leader only.
func (m *Minter) SetupWithManager(mgr ctrl.Manager, w MinterWatches) error {
	b := ctrl.NewControllerManagedBy(mgr).
		Named("step-token").
		Watches(&fleetv1alpha1.FleetStage{}, handler.EnqueueRequestsFromMapFunc(tokenRequest)).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(
			func(_ context.Context, obj client.Object) []reconcile.Request {
				return []reconcile.Request{{NamespacedName: tokenKey(obj.GetName())}}
			}), builder.WithPredicates(predicate.Or(predicate.AnnotationChangedPredicate{}, predicate.LabelChangedPredicate{}))).
		WatchesRawSource(source.Kind(w.Tokens, client.Object(&corev1.Secret{}),
			handler.EnqueueRequestsFromMapFunc(tokenRequest)))
	if w.Keys != nil {
		b = b.WatchesRawSource(source.Kind(w.Keys, client.Object(&corev1.Secret{}),
			handler.EnqueueRequestsFromMapFunc(m.everyProject)))
	}
	return b.Complete(m)
}

// tokenKey names the token Secret of a namespace.
func tokenKey(namespace string) types.NamespacedName {
	return types.NamespacedName{Namespace: namespace, Name: fleetv1alpha1.StepTokenSecretName}
}

// tokenRequest maps an object to its namespace's token Secret.
func tokenRequest(_ context.Context, obj client.Object) []reconcile.Request {
	return []reconcile.Request{{NamespacedName: tokenKey(obj.GetNamespace())}}
}

// everyProject maps a signing key change to every namespace with a
// FleetStage: their tokens are re-minted with the new key.
func (m *Minter) everyProject(ctx context.Context, _ client.Object) []reconcile.Request {
	var fleets fleetv1alpha1.FleetStageList
	if err := m.client.List(ctx, &fleets, client.UnsafeDisableDeepCopy); err != nil {
		log.FromContext(ctx).Error(err, "Error listing FleetStages after a signing key change")
		return nil
	}
	seen := map[string]bool{}
	var reqs []reconcile.Request
	for i := range fleets.Items {
		if ns := fleets.Items[i].Namespace; !seen[ns] {
			seen[ns] = true
			reqs = append(reqs, reconcile.Request{NamespacedName: tokenKey(ns)})
		}
	}
	return reqs
}

// Reconcile makes the token Secret of one namespace match its FleetStages,
// the signing key and the namespace's revocation.
func (m *Minter) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	ns := req.Namespace
	logger := log.FromContext(ctx).WithValues("namespace", ns)
	// Only whether one exists matters: the cache's objects, not copies of a
	// FleetStage that may list ten thousand inline targets.
	var fleets fleetv1alpha1.FleetStageList
	if err := m.client.List(ctx, &fleets, client.InNamespace(ns), client.Limit(1), client.UnsafeDisableDeepCopy); err != nil {
		return reconcile.Result{}, fmt.Errorf("error listing FleetStages in %q: %w", ns, err)
	}
	var namespace corev1.Namespace
	if err := m.client.Get(ctx, client.ObjectKey{Name: ns}, &namespace); client.IgnoreNotFound(err) != nil {
		return reconcile.Result{}, fmt.Errorf("error getting Namespace %q: %w", ns, err)
	}
	revocation := RevocationOf(namespace.Annotations)
	key := tokenKey(ns)
	var secret corev1.Secret
	err := m.tokens.Get(ctx, key, &secret)
	exists := err == nil
	if err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, fmt.Errorf("error getting Secret %s: %w", key, err)
	}

	now := m.clock.Now()
	if len(fleets.Items) == 0 || revocation.Refuses(now) {
		if exists && secret.Labels[ManagedByLabel] == ManagedByValue {
			if err := m.client.Delete(ctx, &secret); client.IgnoreNotFound(err) != nil {
				return reconcile.Result{}, fmt.Errorf("error deleting Secret %s: %w", key, err)
			}
			logger.Info("Deleted step token", "Secret", key, "revoked", len(fleets.Items) > 0)
		}
		if len(fleets.Items) > 0 && !revocation.All {
			// Revoked until a time still to come.
			return reconcile.Result{RequeueAfter: revocation.Before.Sub(now)}, nil
		}
		return reconcile.Result{}, nil
	}

	if _, labelled := namespace.Labels[fleetv1alpha1.PromotionGuardLabel]; !labelled {
		// The chart's admission policy admits a step token only in a
		// Project the controller labelled as holding a FleetStage: the
		// namespace's label change brings the next look.
		logger.V(1).Info("Waiting for the namespace to be labelled as a fleet Project before minting its step token")
		return reconcile.Result{}, nil
	}
	keys, err := m.keys.SigningKeys(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	current := KeySet{Current: keys.Current}
	if exists && secret.Labels[ManagedByLabel] == ManagedByValue {
		token := string(secret.Data[fleetv1alpha1.StepTokenSecretKey])
		if verdict, issued := Check(current, ns, token, now, revocation); verdict == Valid &&
			now.Sub(issued) < RenewAfter {
			return reconcile.Result{RequeueAfter: RenewAfter - now.Sub(issued)}, nil
		}
	}
	return m.writeToken(ctx, ns, &secret, exists, []byte(Issue(keys.Current, ns, now)))
}

// writeToken creates the token Secret of namespace ns with token, or writes
// token into the existing one, secret.
func (m *Minter) writeToken(ctx context.Context, ns string, secret *corev1.Secret, exists bool,
	token []byte) (reconcile.Result, error) {
	key := tokenKey(ns)
	logger := log.FromContext(ctx).WithValues("namespace", ns)
	if !exists {
		*secret = corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: ns, Name: key.Name,
				Labels: map[string]string{ManagedByLabel: ManagedByValue},
			},
			Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{fleetv1alpha1.StepTokenSecretKey: token},
		}
		switch err := m.client.Create(ctx, secret); {
		case apierrors.IsAlreadyExists(err):
			// The cache has not seen the token this minter created a
			// moment ago (a FleetStage event right after a Secret one):
			// look again once it has, rather than report an error.
			return reconcile.Result{RequeueAfter: time.Second}, nil
		case err != nil:
			return reconcile.Result{}, fmt.Errorf("error creating Secret %s: %w", key, err)
		}
		logger.Info("Minted step token", "Secret", key)
		return reconcile.Result{RequeueAfter: RenewAfter}, nil
	}
	if secret.Labels == nil {
		secret.Labels = map[string]string{}
	}
	secret.Labels[ManagedByLabel] = ManagedByValue
	if secret.Data == nil {
		secret.Data = map[string][]byte{}
	}
	secret.Data[fleetv1alpha1.StepTokenSecretKey] = token
	if err := m.client.Update(ctx, secret); err != nil {
		return reconcile.Result{}, fmt.Errorf("error updating Secret %s: %w", key, err)
	}
	logger.Info("Re-minted step token", "Secret", key)
	return reconcile.Result{RequeueAfter: RenewAfter}, nil
}
