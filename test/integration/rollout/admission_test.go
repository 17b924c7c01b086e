//go:build integration

package rollout_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/envtest"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetenv"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/kargosim"
	"github.com/kargo-fleet/kargo-fleet/internal/render"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

// kargoAPI returns the simulated Kargo API server: what the Kargo UI and
// the kargo CLI call. It writes as Kargo's API server ServiceAccount.
func kargoAPI(t *testing.T) *kargosim.APIServer {
	t.Helper()
	cfg, err := env.AddUser(kargosim.APIServerUser, "system:masters")
	require.NoError(t, err)
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	require.NoError(t, err)
	return kargosim.NewAPIServer(c)
}

// kargoPromoter creates a user with Kargo's promoter rights in ns (promote
// on Stages, create Promotions), bound also to the chart's ClusterRoles
// named in clusterRoles, and returns a client acting as the user.
func kargoPromoter(t *testing.T, ns, name string, clusterRoles ...string) (authenticationv1.UserInfo, client.Client) {
	t.Helper()
	ctx := context.Background()
	cfg, err := env.AddUser(name)
	require.NoError(t, err)
	require.NoError(t, env.Client.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{kargo.GroupVersion.Group}, Resources: []string{"stages"}, Verbs: []string{kargo.PromoteVerb, "get"}},
			{APIGroups: []string{kargo.GroupVersion.Group}, Resources: []string{"promotions"}, Verbs: []string{"create", "get"}},
		}}))
	bind := func(kind, role string) {
		require.NoError(t, env.Client.Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-" + strings.ToLower(kind) + "-" + role},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: role},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}},
		}))
	}
	bind("Role", name)
	for _, r := range clusterRoles {
		bind("ClusterRole", r)
	}
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	require.NoError(t, err)
	return authenticationv1.UserInfo{Username: name}, c
}

// waitGuarded waits for the controller to label the fleet's Project for the
// admission guard.
func waitGuarded(t *testing.T, ns string) {
	t.Helper()
	require.Eventually(t, func() bool {
		n := &corev1.Namespace{}
		return env.Client.Get(context.Background(), client.ObjectKey{Name: ns}, n) == nil &&
			n.Labels[fleetv1alpha1.PromotionGuardLabel] == fleetv1alpha1.PromotionGuardEnforce
	}, wait, tick, "the controller never labelled namespace %s for the admission guard", ns)
}

// targetPromotionsNotBy lists the Promotions into target Stages that
// kargo-fleet did not create.
func targetPromotionsNotBy(t *testing.T, ns string) []string {
	t.Helper()
	list := &kargo.PromotionList{}
	require.NoError(t, env.Client.List(context.Background(), list, client.InNamespace(ns)))
	var out []string
	for _, p := range list.Items {
		if strings.HasPrefix(p.Spec.Stage, "fleet.") && p.Labels[fleetv1alpha1.RolloutLabel] == "" {
			out = append(out, p.Name)
		}
	}
	return out
}

// targetStageOf returns the name of a target Stage of wave.
func targetStageOf(t *testing.T, f *fleet, wave string) string {
	t.Helper()
	list := &kargo.StageList{}
	require.NoError(t, env.Client.List(context.Background(), list, client.InNamespace(f.ns),
		client.MatchingLabels{fleetv1alpha1.RoleLabel: fleetv1alpha1.RoleTarget, fleetv1alpha1.WaveLabel: wave}))
	require.NotEmpty(t, list.Items, "no target Stage in wave %s", wave)
	return list.Items[0].Name
}

func TestKargoUIPathsAroundTheFleetAreRefused(t *testing.T) {
	ctx := context.Background()
	f := newFleet(t, "ui-paths", fleetSpec{
		targets: inline("c", 4, nil, nil),
		waves: []fleetv1alpha1.Wave{
			{Name: "pilot", Count: testutil.Int(1)},
			{Name: "critical", Approval: fleetv1alpha1.ApprovalRequired, MaxConcurrent: testutil.Int(1)},
		},
		autoPromote: true,
	})
	waitGuarded(t, f.ns)
	api := kargoAPI(t)
	alice, _ := kargoPromoter(t, f.ns, "alice-"+f.ns)
	f.ship(f.good)
	f.rollout(f.good, fleetv1alpha1.RolloutWaitingForApproval)

	// "Promote to downstream" on the pilot wave Stage: Kargo's API server
	// creates one Promotion into every Stage taking Freight from it, the
	// critical wave Stage and all three critical targets. The targets are
	// refused, and the refusal says what works.
	_, err := api.PromoteDownstream(ctx, alice, f.ns, "fleet-pilot", f.good)
	require.Error(t, err, "the target Promotions of Promote to downstream are refused")
	msg := err.Error()
	require.Contains(t, msg, `is a target of fleet "fleet"`)
	require.Contains(t, msg, "kubernetes:"+alice.Username, "the refusal names the person behind Kargo's API server")
	require.Contains(t, msg, "kargo approve --project ui-paths --freight "+f.good)
	require.Contains(t, msg, "kargo promote --project ui-paths --stage fleet-pilot")

	// Promote on a critical target tile with Freight no wave verified:
	// Kargo's "Manual approval required → Approve", then Promote.
	f.ensureFreight(f.bad)
	_, err = api.ApproveAndPromote(ctx, alice, f.ns, targetStageOf(t, f, "critical"), f.bad)
	require.ErrorContains(t, err, `is a target of fleet "fleet"`)

	// The adopted template Stage is never promoted.
	_, err = api.PromoteToStage(ctx, alice, f.ns, "prod", f.good)
	require.ErrorContains(t, err, `Stage "prod" is the template of fleet "fleet"`)
	err = env.Client.Create(ctx, kargo.NewPromotion(f.ns, "prod", f.good, nil, nil))
	require.ErrorContains(t, err, "is the template of fleet", "kubectl as a cluster administrator is refused too")

	time.Sleep(2 * time.Second)
	require.Empty(t, targetPromotionsNotBy(t, f.ns), "no Promotion into a target Stage exists but kargo-fleet's")
	for id, freight := range f.targetFreight() {
		if freight != "" {
			require.Equal(t, f.good, freight, "target %s", id)
		}
	}
	require.Empty(t, f.promotionsOf(f.good, "critical"), "no critical target started before the approval")
	ro := f.rollout(f.good, fleetv1alpha1.RolloutWaitingForApproval)
	require.Equal(t, fleetv1alpha1.RolloutWaitingForApproval, ro.Status.Phase)

	// The way that works: kargo approve. The controller's own Promotions
	// pass the guard, within the wave's concurrency.
	require.NoError(t, api.Approve(ctx, alice, f.ns, "fleet-critical", f.good))
	done := f.rollout(f.good, fleetv1alpha1.RolloutSucceeded, fleetv1alpha1.RolloutFailed)
	require.Equal(t, fleetv1alpha1.RolloutSucceeded, done.Status.Phase, done.Status.Message)
	// Every target ran the approved Freight. (The Project auto-promotes the
	// first wave Stage, which took the newer f.bad into a rollout queued
	// behind this one: it may have started on the pilot since.)
	list := &kargo.StageList{}
	require.NoError(t, env.Client.List(ctx, list, client.InNamespace(f.ns), client.MatchingLabels{fleetv1alpha1.RoleLabel: fleetv1alpha1.RoleTarget}))
	require.Len(t, list.Items, 4)
	for _, st := range list.Items {
		var ran []string
		for _, c := range st.Status.FreightHistory {
			for _, ref := range c.Items {
				ran = append(ran, ref.Name)
			}
		}
		require.Contains(t, ran, f.good, "target %s", st.Name)
	}
	require.Empty(t, targetPromotionsNotBy(t, f.ns), "no Promotion into a target Stage exists but kargo-fleet's")
}

func TestHeldBackFreightIsRefusedAtAdmissionForEveryFleetStage(t *testing.T) {
	ctx := context.Background()
	f := ringedFleet(t, "held-back-admission", fleetv1alpha1.FleetPolicy{})
	waitGuarded(t, f.ns)
	f.ship(f.good)
	f.rollout(f.good, fleetv1alpha1.RolloutSucceeded)
	f.ship(f.bad)
	f.rollout(f.bad, fleetv1alpha1.RolloutFailed)
	_, c := kargoPromoter(t, f.ns, "oncall-"+f.ns, "kargo-fleet-break-glass")
	// The bad Freight failed the canary, so Kargo would refuse it for
	// fleet-general too ("not available to this Stage"). The API server calls
	// validating webhooks in parallel and answers with whichever refusal comes
	// first; approving it for fleet-general leaves the guard the only one to
	// refuse, so the message tested is the fleet's every time.
	require.NoError(t, kargosim.Approve(ctx, env.Client, client.ObjectKey{Namespace: f.ns, Name: f.bad}, "fleet-general"))
	before := len(promotionsOfFreight(t, f.ns, f.bad))

	pilotTarget := render.TargetStageName("fleet", "pilot-00")
	for _, p := range []*kargo.Promotion{
		kargo.NewPromotion(f.ns, "fleet-pilot", f.bad, nil, nil),
		kargo.NewPromotion(f.ns, "fleet-general", f.bad, nil, nil),
		kargo.NewPromotion(f.ns, pilotTarget, f.bad, map[string]string{fleetv1alpha1.BreakGlassLabel: "fleet"},
			map[string]string{fleetv1alpha1.BreakGlassReasonAnnotation: "INC-1"}),
	} {
		err := c.Create(ctx, p)
		require.Error(t, err, "Stage %s", p.Spec.Stage)
		require.Contains(t, err.Error(), "is held back from fleet")
		require.Contains(t, err.Error(), fleetv1alpha1.RetryFreightAnnotation)
	}
	require.Len(t, promotionsOfFreight(t, f.ns, f.bad), before, "nothing was created, so no step ran")
}

func TestBreakGlassNeedsTheRightAndIsNotDrift(t *testing.T) {
	ctx := context.Background()
	f := newFleet(t, "break-glass", fleetSpec{targets: inline("b", 3, nil, nil), waves: driftWaves(), autoPromote: true})
	waitGuarded(t, f.ns)
	f.ship(f.good)
	f.rollout(f.good, fleetv1alpha1.RolloutSucceeded)
	require.Equal(t, f.good, f.lastGood())
	f.ensureFreight(f.bad)
	// A pilot target: it takes Freight from the adopted Stage's sources, so
	// Kargo finds any Freight available to it.
	stage := targetStageOf(t, f, "pilot")
	glass := func(c client.Client, reason string) (*kargo.Promotion, error) {
		p := kargo.NewPromotion(f.ns, stage, f.bad, map[string]string{fleetv1alpha1.BreakGlassLabel: "fleet"},
			map[string]string{fleetv1alpha1.BreakGlassReasonAnnotation: reason})
		return p, c.Create(ctx, p)
	}

	// The fleet operator role does not carry the break-glass right.
	_, operator := kargoPromoter(t, f.ns, "operator-"+f.ns, "kargo-fleet-fleet-operator")
	_, err := glass(operator, "INC-7")
	require.ErrorContains(t, err, `may not break glass on fleet "fleet"`)
	// Without the marks, a target Promotion is refused like any other.
	require.ErrorContains(t, operator.Create(ctx, kargo.NewPromotion(f.ns, stage, f.bad, nil, nil)), "is a target of fleet")

	// Kargo's API server creates Promotions for every Kargo UI user: a grant
	// of the right to it (a Kargo project admin can make one from the UI's
	// YAML editor) counts for nothing.
	_, kargoAPIServer := kargoPromoter(t, f.ns, "system:serviceaccount:kargo:kargo-api", "kargo-fleet-break-glass")
	_, err = glass(kargoAPIServer, "INC-7")
	require.ErrorContains(t, err, "no grant to it counts")

	// An on-call automation's ServiceAccount: the Kargo UI's "Created By"
	// shows "system" for it, so the target Stage's description names it.
	oncallSA := "system:serviceaccount:ops:oncall-" + f.ns
	_, oncall := kargoPromoter(t, f.ns, oncallSA, "kargo-fleet-break-glass")
	// `kargo-fleet break-glass --dry-run`: every webhook judges it, nothing
	// is created.
	dry := kargo.NewPromotion(f.ns, stage, f.bad, map[string]string{fleetv1alpha1.BreakGlassLabel: "fleet"},
		map[string]string{fleetv1alpha1.BreakGlassReasonAnnotation: "INC-7"})
	require.ErrorContains(t, operator.Create(ctx, dry.DeepCopy(), client.DryRunAll), `may not break glass on fleet "fleet"`)
	require.NoError(t, oncall.Create(ctx, dry, client.DryRunAll), "admitted in a dry run")
	promos := &kargo.PromotionList{}
	require.NoError(t, env.Client.List(ctx, promos, client.InNamespace(f.ns), client.MatchingLabels{fleetv1alpha1.BreakGlassLabel: "fleet"}))
	require.Empty(t, promos.Items, "a dry run creates nothing")
	p, err := glass(oncall, "INC-7: hotfix one cluster")
	require.NoError(t, err)
	stageRuns(t, f, stage, f.bad)
	requireEvent(t, f.ns, "BreakGlassPromotion", "INC-7: hotfix one cluster")
	e := f.kargoEvent("Stage", stage, "BreakGlassPromotion", "INC-7: hotfix one cluster")
	require.Contains(t, e.Message, "intended (not drift)", "Kargo's Events page shows it on the target Stage as intended")
	require.Contains(t, e.Message, oncallSA, "and who pushed it")
	described := &kargo.Stage{}
	require.Eventually(t, func() bool {
		return env.Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: stage}, described) == nil &&
			strings.HasPrefix(described.Annotations[kargo.DescriptionAnnotation], "Break-glass: ")
	}, wait, tick, "the target Stage's description never named the break-glass Promotion")
	for _, want := range []string{"kubernetes:" + oncallSA, f.bad, p.Name, "INC-7: hotfix one cluster"} {
		require.Contains(t, described.Annotations[kargo.DescriptionAnnotation], want, "the Kargo UI's Stage drawer shows who, what and why")
	}

	// One Event per break-glass Promotion, however often the leader changes.
	for range 2 {
		require.NoError(t, env.StopController())
		require.NoError(t, env.StartController())
	}
	time.Sleep(2 * time.Second)
	events, err := kargosim.ListProjectEvents(ctx, env.Client, f.ns)
	require.NoError(t, err)
	onStage := 0
	for _, ev := range events {
		if ev.Reason == "BreakGlassPromotion" && strings.Contains(ev.Message, p.Name) {
			onStage++
		}
	}
	require.Equal(t, 1, onStage, "one Event on the target Stage after two controller restarts")
	all := &eventsv1.EventList{}
	require.NoError(t, env.Client.List(ctx, all, client.InNamespace(f.ns)))
	onFleet := 0
	for _, ev := range all.Items {
		if ev.Reason == "BreakGlassPromotion" && ev.Regarding.Kind == "FleetStage" && strings.Contains(ev.Note, p.Name) {
			onFleet++
		}
	}
	require.Equal(t, 1, onFleet, "one Event on the FleetStage after two controller restarts")

	// Its marks never change afterwards.
	patch := client.MergeFrom(p.DeepCopy())
	p.Annotations[fleetv1alpha1.BreakGlassReasonAnnotation] = "something else"
	require.ErrorContains(t, env.Client.Patch(ctx, p, patch), "never change")

	// Intended, not drift.
	time.Sleep(3 * time.Second)
	fs := &fleetv1alpha1.FleetStage{}
	require.NoError(t, env.Client.Get(ctx, f.fleetKey, fs))
	require.Nil(t, fs.Status.Drift, "a break-glass Promotion is not drift")
	require.Equal(t, f.bad, f.targetFreight()[strings.TrimPrefix(stage, "fleet.")])

	// The fleet's next Freight reaches the target: the description goes.
	const next = "f3-next"
	f.ship(next)
	f.rollout(next, fleetv1alpha1.RolloutSucceeded)
	require.Eventually(t, func() bool {
		return env.Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: stage}, described) == nil &&
			described.Annotations[kargo.DescriptionAnnotation] == ""
	}, wait, tick, "the break-glass description stayed after the fleet's own Promotion: %q", described.Annotations[kargo.DescriptionAnnotation])
}

func TestProjectWithoutFleetStageIsUnaffectedWithKargoFleetUpOrDown(t *testing.T) {
	ctx := context.Background()
	// A fleet Project next to it, to see the difference.
	f := newFleet(t, "guarded-next-door", fleetSpec{targets: inline("g", 2, nil, nil), waves: []fleetv1alpha1.Wave{{Name: "all"}}})
	waitGuarded(t, f.ns)
	f.ensureFreight(f.good)

	ns := "no-fleet"
	require.NoError(t, env.Client.Create(ctx, envtest.ProjectNamespace(ns)))
	require.NoError(t, env.Client.Create(ctx, &kargo.Freight{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "v1"},
		Origin: kargo.FreightOrigin{Kind: kargo.OriginKindWarehouse, Name: "apps"}}))
	require.NoError(t, env.Client.Create(ctx, &kargo.Stage{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "prod.t1"},
		Spec: kargo.StageSpec{
			RequestedFreight: []kargo.FreightRequest{{Origin: kargo.FreightOrigin{Kind: kargo.OriginKindWarehouse, Name: "apps"},
				Sources: kargo.FreightSources{Direct: true}}},
			PromotionTemplate: &kargo.PromotionTemplate{Spec: kargo.PromotionTemplateSpec{Steps: []kargo.PromotionStep{{Uses: "fake-step"}}}},
		},
	}))
	user, c := kargoPromoter(t, ns, "dev-"+ns)
	promoteHere := func() error {
		_, err := kargoAPI(t).PromoteToStage(ctx, user, ns, "prod.t1", "v1")
		return err
	}
	require.NoError(t, promoteHere(), "kargo-fleet up: a Project without a FleetStage promotes as before")
	n := &corev1.Namespace{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Name: ns}, n))
	require.NotContains(t, n.Labels, fleetv1alpha1.PromotionGuardLabel, "only Projects with a FleetStage are labelled")

	// kargo-fleet down: the chart's webhooks for Promotions, pointing at an
	// address where nothing answers.
	down, err := fleetenv.PromotionGuardWebhooks("kargo-fleet-down", nil)
	require.NoError(t, err)
	nowhere := "https://127.0.0.1:1" + *down.Webhooks[0].ClientConfig.Service.Path
	for i := range down.Webhooks {
		down.Webhooks[i].ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: &nowhere}
	}
	require.Equal(t, admissionregistrationv1.Fail, *down.Webhooks[0].FailurePolicy, "the chart fails closed by default")
	require.NoError(t, env.Client.Create(ctx, down))
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), down) })
	require.Eventually(t, func() bool {
		err := env.Client.Create(ctx, kargo.NewPromotion(f.ns, "fleet-all", f.good, nil, nil), client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "failed calling webhook")
	}, wait, tick, "kargo-fleet down: fleet Projects fail closed")
	require.NoError(t, promoteHere(), "kargo-fleet down: a Project without a FleetStage promotes as before")
	p := kargo.NewPromotion(ns, "prod.t1", "v1", nil, nil)
	require.NoError(t, c.Create(ctx, p), "kubectl too")
}
