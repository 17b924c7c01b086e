//go:build integration

package kargosim_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/kargosim"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

// apiServer returns the simulated Kargo API server, writing as Kargo's API
// server ServiceAccount.
func apiServer(t *testing.T) *kargosim.APIServer {
	t.Helper()
	cfg, err := env.AddUser(kargosim.APIServerUser, "system:masters")
	require.NoError(t, err)
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	require.NoError(t, err)
	return kargosim.NewAPIServer(c)
}

// promoter gives a UI user the rights Kargo's promoter role has in ns:
// promote on Stages, create Promotions.
func promoter(t *testing.T, ns, name string) authenticationv1.UserInfo {
	t.Helper()
	userClient(t, ns, name,
		rbacv1.PolicyRule{APIGroups: []string{kargo.GroupVersion.Group}, Resources: []string{"stages"}, Verbs: []string{kargo.PromoteVerb, "get"}},
		rbacv1.PolicyRule{APIGroups: []string{kargo.GroupVersion.Group}, Resources: []string{"promotions"}, Verbs: []string{"create", "get"}})
	return authenticationv1.UserInfo{Username: name}
}

func TestPromoteDownstreamPromotesEveryStageThatTakesFromIt(t *testing.T) {
	ctx := context.Background()
	ns := newProject(t)
	newFreight(t, ns, "f1")
	newStage(t, stage(ns, "wave-1"))
	// What a fleet looks like to Kargo: the next wave Stage and that wave's
	// target Stages all take Freight from the wave Stage before.
	for _, s := range []string{"wave-2", "wave-2.t1", "wave-2.t2", "wave-2.t3"} {
		newStage(t, stage(ns, s).Upstream("wave-1"))
	}
	newStage(t, stage(ns, "elsewhere").Upstream("wave-2"))
	p := mustPromote(t, ns, "wave-1", "f1")
	testutil.Await(t, k8s, p, 10*time.Second, testutil.PromotionPhaseIs(kargo.PromotionSucceeded))
	testutil.Await(t, k8s, testutil.Named[kargo.Freight](ns, "f1"), 10*time.Second, func(f *kargo.Freight) bool { return f.IsVerifiedIn("wave-1") })

	api := apiServer(t)
	// The promote verb is checked on every downstream Stage before anything
	// is created.
	bob := authenticationv1.UserInfo{Username: "bob-" + ns}
	userClient(t, ns, bob.Username)
	_, err := api.PromoteDownstream(ctx, bob, ns, "wave-1", "f1")
	require.ErrorContains(t, err, "may not promote")
	require.Empty(t, stagePromotions(t, ns, "wave-2.t1"))

	alice := promoter(t, ns, "alice-"+ns)
	created, err := api.PromoteDownstream(ctx, alice, ns, "wave-1", "f1")
	require.NoError(t, err)
	got := map[string]bool{}
	for _, p := range created {
		got[p.Spec.Stage] = true
		// Created by the API server's ServiceAccount, a control-plane user:
		// Kargo's webhook keeps the person the API server recorded.
		require.Equal(t, "kubernetes:"+alice.Username, p.Annotations[kargo.CreateActorAnnotation], p.Name)
	}
	require.Equal(t, map[string]bool{"wave-2": true, "wave-2.t1": true, "wave-2.t2": true, "wave-2.t3": true}, got,
		"one Promotion into every Stage that takes Freight from wave-1, none further down")
	for _, p := range created {
		testutil.Await(t, k8s, p, 20*time.Second, testutil.PromotionPhaseIs(kargo.PromotionSucceeded))
	}
}

func TestManualApprovalPromotesFreightNoUpstreamVerified(t *testing.T) {
	ctx := context.Background()
	ns := newProject(t)
	newFreight(t, ns, "f1")
	newStage(t, stage(ns, "wave-1"))
	newStage(t, stage(ns, "wave-2.t1").Upstream("wave-1"))
	api := apiServer(t)
	alice := promoter(t, ns, "alice-"+ns)

	// Not verified upstream: a plain Promote is refused.
	_, err := api.PromoteToStage(ctx, alice, ns, "wave-2.t1", "f1")
	require.ErrorContains(t, err, "not available")

	// Someone without promote on the Stage cannot approve either.
	bob := authenticationv1.UserInfo{Username: "bob-" + ns}
	userClient(t, ns, bob.Username)
	_, err = api.ApproveAndPromote(ctx, bob, ns, "wave-2.t1", "f1")
	require.ErrorContains(t, err, "may not promote")
	f := &kargo.Freight{}
	require.NoError(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "f1"}, f))
	require.False(t, f.IsApprovedFor("wave-2.t1"))

	// "Manual approval required → Approve", then Promote.
	p, err := api.ApproveAndPromote(ctx, alice, ns, "wave-2.t1", "f1")
	require.NoError(t, err)
	require.Equal(t, "kubernetes:"+alice.Username, p.Annotations[kargo.CreateActorAnnotation])
	testutil.Await(t, k8s, p, 10*time.Second, testutil.PromotionPhaseIs(kargo.PromotionSucceeded))
	f = testutil.Await(t, k8s, testutil.Named[kargo.Freight](ns, "f1"), time.Second, func(f *kargo.Freight) bool { return f.IsApprovedFor("wave-2.t1") })
	require.False(t, f.IsVerifiedIn("wave-1"), "wave-1 never had the Freight")
}

// oidcPerson maps a person who logs in through Kargo's OIDC provider onto
// a ServiceAccount of ns, as Kargo does (rbac.kargo.akuity.io/claims),
// holding rules.
func oidcPerson(t *testing.T, ns, sa, email string, rules ...rbacv1.PolicyRule) authenticationv1.UserInfo {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa,
		Annotations: map[string]string{kargo.OIDCClaimsAnnotation: `{"email": "` + email + `"}`}}}))
	require.NoError(t, k8s.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa}, Rules: rules}))
	require.NoError(t, k8s.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: sa},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: ns}}}))
	return kargosim.OIDCUser(email)
}

// TestAPIServerActsForOIDCPeople: a person logged in through Kargo's OIDC
// provider holds the rights of the ServiceAccounts their email maps onto,
// and Kargo records them as "email:<email>": as the create-actor of a
// Promotion, and as the actor of an Abort, which the API server writes with
// its own identity and Kargo's webhook keeps (a control-plane request).
func TestAPIServerActsForOIDCPeople(t *testing.T) {
	ctx := context.Background()
	ns := newProject(t)
	newFreight(t, ns, "f1")
	newStage(t, stage(ns, "slow").Vars(kargosim.DelayVar, "30s"))
	api := apiServer(t)
	promote := rbacv1.PolicyRule{APIGroups: []string{kargo.GroupVersion.Group}, Resources: []string{"stages"}, Verbs: []string{kargo.PromoteVerb, "get"}}
	createPromotions := rbacv1.PolicyRule{APIGroups: []string{kargo.GroupVersion.Group}, Resources: []string{"promotions"}, Verbs: []string{"create", "get"}}
	patchPromotions := rbacv1.PolicyRule{APIGroups: []string{kargo.GroupVersion.Group}, Resources: []string{"promotions"}, Verbs: []string{"patch"}}
	alice := oidcPerson(t, ns, "admins", "alice@example.com", promote, createPromotions, patchPromotions)
	bob := oidcPerson(t, ns, "promoters", "bob@example.com", promote, createPromotions)
	carol := kargosim.OIDCUser("carol@example.com") // mapped onto nothing

	_, err := api.PromoteToStage(ctx, carol, ns, "slow", "f1")
	require.ErrorContains(t, err, "email:carol@example.com may not promote")
	p, err := api.PromoteToStage(ctx, bob, ns, "slow", "f1")
	require.NoError(t, err)
	require.Equal(t, "email:bob@example.com", p.Annotations[kargo.CreateActorAnnotation])
	testutil.Await(t, k8s, p, 10*time.Second, testutil.PromotionPhaseIs(kargo.PromotionRunning))

	require.ErrorContains(t, api.AbortPromotion(ctx, bob, ns, p.Name), "email:bob@example.com may not patch promotions",
		"Kargo's promoter role cannot abort")
	require.NoError(t, api.AbortPromotion(ctx, alice, ns, p.Name))
	got := testutil.Await(t, k8s, p, 10*time.Second, testutil.PromotionPhaseIs(kargo.PromotionAborted))
	abort, ok := kargo.AbortRequestOf(got.Annotations)
	require.True(t, ok)
	require.Equal(t, kargo.AbortRequest{Action: kargo.AbortTerminate, Actor: "email:alice@example.com", ControlPlane: true}, *abort)
	require.NoError(t, api.AbortPromotion(ctx, alice, ns, p.Name), "aborting a finished Promotion changes nothing")
}
