package steps

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/fleetstage/api/v1alpha1"
)

// tokenResync is how often a Project's token Secret is checked again. The
// minter does not watch Secrets (that would cache every Secret of the
// cluster), so this bounds how long a deleted or edited token Secret stays
// wrong.
const tokenResync = 10 * time.Minute

// TokenMinter keeps a step token Secret (v1alpha1.StepTokenSecretName, key
// v1alpha1.StepTokenSecretKey) in every Project namespace that has a
// FleetStage, and deletes it when the last FleetStage goes. The shipped
// ClusterPromotionTasks send it with ${{ secret('kargo-fleet-step-token').token }}.
//
// +kubebuilder:rbac:groups=fleet.kargo-fleet.io,resources=fleetstages,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;create;update;delete
type TokenMinter struct {
	client client.Client
	reader client.Reader
	keys   KeySource
}

var _ reconcile.Reconciler = (*TokenMinter)(nil)

// NewTokenMinter returns a TokenMinter. c lists FleetStages (the cache is
// fine) and writes Secrets; reader reads Secrets without caching them.
func NewTokenMinter(c client.Client, reader client.Reader, keys KeySource) *TokenMinter {
	return &TokenMinter{client: c, reader: reader, keys: keys}
}

// SetupWithManager registers the minter; it runs on the leader only.
func (m *TokenMinter) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("step-token").
		Watches(&fleetv1alpha1.FleetStage{}, handler.EnqueueRequestsFromMapFunc(
			func(_ context.Context, obj client.Object) []reconcile.Request {
				return []reconcile.Request{{NamespacedName: types.NamespacedName{
					Namespace: obj.GetNamespace(), Name: fleetv1alpha1.StepTokenSecretName,
				}}}
			})).
		Complete(m)
}

// Reconcile makes the token Secret of one namespace match its FleetStages.
func (m *TokenMinter) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	ns := req.Namespace
	logger := log.FromContext(ctx).WithValues("namespace", ns)
	// Only whether one exists matters: the cache's objects, not copies of a
	// FleetStage that may list ten thousand inline targets.
	var fleets fleetv1alpha1.FleetStageList
	if err := m.client.List(ctx, &fleets, client.InNamespace(ns), client.Limit(1), client.UnsafeDisableDeepCopy); err != nil {
		return reconcile.Result{}, fmt.Errorf("error listing FleetStages in %q: %w", ns, err)
	}
	key := types.NamespacedName{Namespace: ns, Name: fleetv1alpha1.StepTokenSecretName}
	var secret corev1.Secret
	err := m.reader.Get(ctx, key, &secret)
	exists := err == nil
	if err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, fmt.Errorf("error getting Secret %s: %w", key, err)
	}

	if len(fleets.Items) == 0 {
		if exists && secret.Labels[ManagedByLabel] == ManagedByValue {
			if err := m.client.Delete(ctx, &secret); client.IgnoreNotFound(err) != nil {
				return reconcile.Result{}, fmt.Errorf("error deleting Secret %s: %w", key, err)
			}
			logger.Info("Deleted step token: no FleetStage left", "Secret", key)
		}
		return reconcile.Result{}, nil
	}

	signing, err := m.keys.SigningKey(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	token := []byte(DeriveToken(signing, ns))
	if !exists {
		secret = corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: ns, Name: key.Name,
				Labels: map[string]string{ManagedByLabel: ManagedByValue},
			},
			Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{fleetv1alpha1.StepTokenSecretKey: token},
		}
		if err := m.client.Create(ctx, &secret); err != nil {
			return reconcile.Result{}, fmt.Errorf("error creating Secret %s: %w", key, err)
		}
		logger.Info("Minted step token", "Secret", key)
		return reconcile.Result{RequeueAfter: tokenResync}, nil
	}
	if string(secret.Data[fleetv1alpha1.StepTokenSecretKey]) == string(token) &&
		secret.Labels[ManagedByLabel] == ManagedByValue {
		return reconcile.Result{RequeueAfter: tokenResync}, nil
	}
	if secret.Labels == nil {
		secret.Labels = map[string]string{}
	}
	secret.Labels[ManagedByLabel] = ManagedByValue
	if secret.Data == nil {
		secret.Data = map[string][]byte{}
	}
	secret.Data[fleetv1alpha1.StepTokenSecretKey] = token
	if err := m.client.Update(ctx, &secret); err != nil {
		return reconcile.Result{}, fmt.Errorf("error updating Secret %s: %w", key, err)
	}
	logger.Info("Re-minted step token", "Secret", key)
	return reconcile.Result{RequeueAfter: tokenResync}, nil
}
