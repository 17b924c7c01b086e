//go:build integration

package rollout_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/kargosim"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

// kargoUIPerson maps a person who logs in to the Kargo UI through Kargo's
// OIDC provider onto a ServiceAccount of the Project, the way Kargo does
// (rbac.kargo.akuity.io/claims), with the rights of Kargo's project admin
// role (promote, create and patch Promotions: Promote and Abort in the UI)
// and, when fleetOperator, the chart's fleet operator ClusterRole.
func kargoUIPerson(t *testing.T, ns, sa, email string, fleetOperator bool) authenticationv1.UserInfo {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, env.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa,
		Annotations: map[string]string{kargo.OIDCClaimsAnnotation: `{"email": ["` + email + `"]}`}}}))
	require.NoError(t, env.Client.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{kargo.GroupVersion.Group}, Resources: []string{"stages"}, Verbs: []string{kargo.PromoteVerb, "get"}},
			{APIGroups: []string{kargo.GroupVersion.Group}, Resources: []string{"promotions"}, Verbs: []string{"create", "get", "patch"}},
		}}))
	bind := func(kind, role string) {
		require.NoError(t, env.Client.Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa + "-" + role},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: role},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: ns}},
		}))
	}
	bind("Role", sa)
	if fleetOperator {
		bind("ClusterRole", "kargo-fleet-fleet-operator")
	}
	return kargosim.OIDCUser(email)
}

// runningPromotion waits for a running Promotion matching keep.
func (f *fleet) runningPromotion(what string, keep func(*kargo.Promotion) bool) *kargo.Promotion {
	f.t.Helper()
	var found *kargo.Promotion
	require.Eventually(f.t, func() bool {
		list := &kargo.PromotionList{}
		require.NoError(f.t, env.Client.List(context.Background(), list, client.InNamespace(f.ns)))
		for i := range list.Items {
			p := &list.Items[i]
			if p.Status.Phase == kargo.PromotionRunning && keep(p) {
				found = p
				return true
			}
		}
		return false
	}, wait, tick, "a running %s", what)
	return found
}

// TestFleetActionsFromTheKargoUI: a person whose only access is the Kargo
// UI pauses, resumes, aborts and rolls back a fleet with Kargo's own
// gestures (docs/kargo-ui.md, "Fleet actions from the Kargo UI"), with the
// fleet's rights checked as that person, through the ServiceAccount Kargo
// maps their login onto; a person with the same Kargo rights but without
// the fleet's is refused each time, before Kargo acts.
func TestFleetActionsFromTheKargoUI(t *testing.T) {
	ctx := context.Background()
	f := newFleet(t, "ui-actions", fleetSpec{
		targets: inline("u", 8, nil, slow(time.Second)),
		waves: []fleetv1alpha1.Wave{
			{Name: "pilot", Count: testutil.Int(1)},
			{Name: "rest", MaxConcurrent: testutil.Int(2)},
		},
	})
	waitGuarded(t, f.ns)
	api := kargoAPI(t)
	alice := kargoUIPerson(t, f.ns, "fleet-ops", "alice@example.com", true)
	bob := kargoUIPerson(t, f.ns, "kargo-admins", "bob@example.com", false)

	// Pause: Abort on the running wave Promotion.
	f.ship(f.good)
	wave := f.runningPromotion("wave Promotion of rest", func(p *kargo.Promotion) bool {
		return p.Spec.Stage == "fleet-rest" && p.Spec.Freight == f.good
	})
	err := api.AbortPromotion(ctx, bob, f.ns, wave.Name)
	require.ErrorContains(t, err, "would pause fleet \"fleet\"")
	require.ErrorContains(t, err, "email:bob@example.com (reviewed as system:serviceaccount:ui-actions:kargo-admins) lacks patch on fleetrollouts")
	got := &kargo.Promotion{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(wave), got))
	require.NotContains(t, got.Annotations, kargo.AbortAnnotation, "the refused Abort changed nothing")
	requireEvent(t, f.ns, "PromotionRefused", fmt.Sprintf("Refused an Abort of Promotion %s (Stage fleet-rest, Freight %s) "+
		"asked by email:bob@example.com (through ", wave.Name, f.good))

	require.NoError(t, api.AbortPromotion(ctx, alice, f.ns, wave.Name))
	paused := f.rollout(f.good, fleetv1alpha1.RolloutPaused)
	require.Equal(t, fleetv1alpha1.IntentPause, paused.Spec.Intent)
	require.Equal(t, "email:alice@example.com", paused.Annotations[fleetv1alpha1.IntentActorAnnotation])
	started := countPromotions(t, f, paused.Name)
	time.Sleep(2 * time.Second)
	require.Equal(t, started, countPromotions(t, f, paused.Name), "no target starts while paused")
	require.Less(t, started, 8)

	// Resume: Promote the paused Freight into the wave Stage where it stopped.
	_, err = api.PromoteToStage(ctx, bob, f.ns, "fleet-rest", f.good)
	require.ErrorContains(t, err, "would resume fleet \"fleet\"")
	_, err = api.PromoteToStage(ctx, alice, f.ns, "fleet-rest", f.good)
	require.NoError(t, err)
	done := f.rollout(f.good, fleetv1alpha1.RolloutSucceeded, fleetv1alpha1.RolloutFailed)
	require.Equal(t, fleetv1alpha1.RolloutSucceeded, done.Status.Phase, done.Status.Message)
	require.Equal(t, fleetv1alpha1.IntentRun, done.Spec.Intent)
	require.Equal(t, "email:alice@example.com", done.Annotations[fleetv1alpha1.IntentActorAnnotation])

	// Abort: Abort on a running target Promotion of the rollout.
	f.ship(f.bad)
	ro := f.rollout(f.bad, fleetv1alpha1.RolloutProgressing)
	target := f.runningPromotion("target Promotion", func(p *kargo.Promotion) bool {
		return p.Labels[fleetv1alpha1.RolloutLabel] == ro.Name && p.Labels[fleetv1alpha1.WaveLabel] == "rest"
	})
	err = api.AbortPromotion(ctx, bob, f.ns, target.Name)
	require.ErrorContains(t, err, "would abort fleet \"fleet\"")
	require.NoError(t, api.AbortPromotion(ctx, alice, f.ns, target.Name))
	aborted := f.rollout(f.bad, fleetv1alpha1.RolloutAborted)
	require.Equal(t, "email:alice@example.com", aborted.Annotations[fleetv1alpha1.IntentActorAnnotation])
	moved := 0
	for _, freight := range f.targetFreight() {
		if freight == f.bad {
			moved++
		}
	}
	require.Positive(t, moved, "some targets run the bad Freight")

	// Rollback: Promote the last good Freight into the first wave Stage.
	_, err = api.PromoteToStage(ctx, bob, f.ns, "fleet-pilot", f.good)
	require.ErrorContains(t, err, "would roll back fleet \"fleet\"")
	forwardOfGood := forwardRollouts(t, f, f.good)
	gesture, err := api.PromoteToStage(ctx, alice, f.ns, "fleet-pilot", f.good)
	require.NoError(t, err)
	rb := f.awaitRollback(f.good)
	require.Equal(t, aborted.Name, rb.Spec.RollbackOf)
	require.Equal(t, "email:alice@example.com", rb.Spec.Actor)
	require.Eventually(t, func() bool {
		for _, freight := range f.targetFreight() {
			if freight == f.bad {
				return false
			}
		}
		return true
	}, wait, tick, "every target is back on the good Freight")
	// Kargo calls the wave step again while the rollback runs: each call
	// reports the rollback, and none starts a forward rollout of the Freight.
	f.rollbackDone(rb.Name)
	require.Eventually(t, func() bool {
		p := &kargo.Promotion{}
		require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(gesture), p))
		return p.Status.Phase.IsTerminal()
	}, wait, tick, "alice's Promotion ends with the rollback")
	require.Equal(t, forwardOfGood, forwardRollouts(t, f, f.good), "the rollback gesture started a forward rollout")
}

// forwardRollouts names the forward rollouts of freight.
func forwardRollouts(t *testing.T, f *fleet, freight string) []string {
	t.Helper()
	list := &fleetv1alpha1.FleetRolloutList{}
	require.NoError(t, env.Client.List(context.Background(), list, client.InNamespace(f.ns)))
	var out []string
	for _, ro := range list.Items {
		if ro.Spec.Direction == fleetv1alpha1.DirectionForward && ro.Spec.Freight.Name == freight {
			out = append(out, ro.Name)
		}
	}
	return out
}

// rollbackDone waits for the rollback to succeed.
func (f *fleet) rollbackDone(name string) {
	f.t.Helper()
	require.Eventually(f.t, func() bool {
		ro := &fleetv1alpha1.FleetRollout{}
		require.NoError(f.t, env.Client.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: name}, ro))
		return ro.Status.Phase == fleetv1alpha1.RolloutSucceeded
	}, wait, tick, "rollback %s never succeeded", name)
}
