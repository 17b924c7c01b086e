//go:build integration

package rollout_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/argocd"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/manager"
	"github.com/kargo-fleet/kargo-fleet/internal/render"
)

// applicationOf creates the Argo CD Application of a target in "argocd",
// authorizing the target's Stage, as the ApplicationSet of
// examples/argocd does, and returns its name.
func applicationOf(t *testing.T, f *fleet, id string) string {
	t.Helper()
	name := fmt.Sprintf("%s-guestbook-%s", f.ns, id)
	app := &unstructured.Unstructured{}
	app.SetGroupVersionKind(argocd.GroupVersion.WithKind(argocd.ApplicationKind))
	app.SetNamespace(kargo.ArgoCDDefaultNamespace)
	app.SetName(name)
	app.SetAnnotations(map[string]string{kargo.AuthorizedStageAnnotation: f.ns + ":" + render.TargetStageName("fleet", id)})
	require.NoError(t, env.Client.Create(context.Background(), app))
	return name
}

// argoCDDoes patches an Application's status as Argo CD would after what
// someone did to it outside the fleet.
func argoCDDoes(t *testing.T, app string, status map[string]any) {
	t.Helper()
	raw, err := json.Marshal(map[string]any{"status": status})
	require.NoError(t, err)
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(argocd.GroupVersion.WithKind(argocd.ApplicationKind))
	u.SetNamespace(kargo.ArgoCDDefaultNamespace)
	u.SetName(app)
	require.NoError(t, env.Client.Status().Patch(context.Background(), u, client.RawPatch(types.MergePatchType, raw)))
}

// TestApplicationChangesAreReported: what a target runs is also read from
// its Argo CD Application. After a rollout through argocd-update, whose
// syncs are the fleet's, nothing is reported; then a sync made in Argo CD,
// an edited live resource, another Kargo Stage's argocd-update and a
// Degraded Application are each reported on their target, classified, on
// the FleetStage's status, its Drifted condition and Kargo's Events page,
// within 30 seconds; and the report clears when the Applications are back.
func TestApplicationChangesAreReported(t *testing.T) {
	ctx := context.Background()
	f := newFleet(t, "app-drift", fleetSpec{targets: inline("a", 4, nil, nil), waves: []fleetv1alpha1.Wave{{Name: "all"}},
		steps: []kargo.PromotionStep{{Uses: "argocd-update", As: "sync",
			Config: cfgJSON(t, map[string]any{"apps": []any{map[string]any{"name": "${{ ctx.project }}-guestbook-${{ vars.fleetTargetId }}"}}})}}})
	apps := map[string]string{}
	for _, id := range []string{"a-00", "a-01", "a-02", "a-03"} {
		apps[id] = applicationOf(t, f, id)
	}
	f.ship(f.good)
	f.rollout(f.good, fleetv1alpha1.RolloutSucceeded)
	fs := &fleetv1alpha1.FleetStage{}
	// The rollout's syncs are the fleet's: nothing to report.
	time.Sleep(3 * time.Second)
	require.NoError(t, env.Client.Get(ctx, f.fleetKey, fs))
	require.Nil(t, fs.Status.Applications, "the fleet's own syncs are not reported")
	synced := &unstructured.Unstructured{}
	synced.SetGroupVersionKind(argocd.GroupVersion.WithKind(argocd.ApplicationKind))
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: kargo.ArgoCDDefaultNamespace, Name: apps["a-00"]}, synced))
	app, err := argocd.FromUnstructured(synced.Object)
	require.NoError(t, err)
	last, ok := app.LastSync()
	require.True(t, ok, "argocd-update synced the Application")
	require.Equal(t, "fleet.a-00", mustStage(t, last.Promotion))
	ownSync := map[string]argocd.LastSync{}
	for id, name := range apps {
		u := synced.DeepCopy()
		require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: kargo.ArgoCDDefaultNamespace, Name: name}, u))
		a, err := argocd.FromUnstructured(u.Object)
		require.NoError(t, err)
		ownSync[id], _ = a.LastSync()
	}

	started := time.Now()
	// A sync made in Argo CD: Argo CD keeps the earlier operation's info
	// (the fleet's Promotion) and changes its initiator.
	argoCDDoes(t, apps["a-00"], map[string]any{"operationState": map[string]any{"phase": "Succeeded",
		"operation":  map[string]any{"initiatedBy": map[string]any{"username": "alice"}},
		"syncResult": map[string]any{"revision": "0ld"}}})
	argoCDDoes(t, apps["a-01"], map[string]any{"sync": map[string]any{"status": "OutOfSync"}})
	argoCDDoes(t, apps["a-02"], map[string]any{"operationState": map[string]any{"phase": "Succeeded",
		// Another Stage's Promotion, gone since, created by a ServiceAccount:
		// Kargo starts the sync as its whole create-actor.
		"operation": map[string]any{"initiatedBy": map[string]any{"username": "kubernetes:system:serviceaccount:ci:deployer"},
			"info": []any{map[string]any{"name": argocd.PromotionInfoKey, "value": "hotfix.01jdx5k0a1b2c3d4e5f6g7h8j9.5d6e7f8"}}}}})
	argoCDDoes(t, apps["a-03"], map[string]any{"health": map[string]any{"status": "Degraded", "message": "Deployment exceeded its progress deadline"}})

	want := map[string]string{"a-00": "ManualSync", "a-01": "OutOfSync", "a-02": "OtherKargoStage", "a-03": "Degraded"}
	require.Eventually(t, func() bool {
		fs = &fleetv1alpha1.FleetStage{}
		if env.Client.Get(ctx, f.fleetKey, fs) != nil || fs.Status.Applications == nil {
			return false
		}
		got := map[string]string{}
		for _, e := range fs.Status.Applications.Examples {
			got[e.Target] = e.Reason
		}
		return fmt.Sprint(got) == fmt.Sprint(want)
	}, 30*time.Second, tick, "the Applications' changes were not reported within 30s: %+v", fs.Status.Applications)
	t.Logf("report: four Application changes reported %s after they were made", time.Since(started).Round(100*time.Millisecond))
	st := fs.Status.Applications
	require.Equal(t, int32(3), st.Foreign)
	require.Equal(t, int32(1), st.Broken)
	require.Equal(t, "Foreign", st.Examples[0].Class, "foreign first")
	cond := meta.FindStatusCondition(fs.Status.Conditions, fleetv1alpha1.DriftedCondition)
	require.NotNil(t, cond)
	require.Equal(t, "ApplicationsChanged", cond.Reason)
	e := f.kargoEvent("Stage", "fleet.a-00", "ApplicationChanged", "alice synced revision 0ld in Argo CD")
	require.Contains(t, e.Message, apps["a-00"])
	f.kargoEvent("Stage", "fleet.a-02", "ApplicationChanged", "of Stage hotfix")
	description := func(stage string) string {
		st := &kargo.Stage{}
		require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: stage}, st))
		return st.Annotations[kargo.DescriptionAnnotation]
	}
	require.Eventually(t, func() bool {
		return strings.HasPrefix(description("fleet.a-03"), "Argo CD: ") && strings.Contains(description("fleet.a-00"), "ManualSync")
	}, 30*time.Second, tick, "the Kargo UI's Stage drawer does not say what the Application shows: %q", description("fleet.a-00"))
	require.Contains(t, description("fleet.a-03"), "broken (Degraded): Degraded: Deployment exceeded its progress deadline")

	// Back as the fleet left them: the report clears.
	for _, id := range []string{"a-00", "a-02"} {
		argoCDDoes(t, apps[id], map[string]any{"operationState": map[string]any{"phase": "Succeeded",
			"operation": map[string]any{"initiatedBy": map[string]any{"username": ownSync[id].By},
				"info": []any{map[string]any{"name": argocd.PromotionInfoKey, "value": ownSync[id].Promotion}}}}})
	}
	argoCDDoes(t, apps["a-01"], map[string]any{"sync": map[string]any{"status": "Synced"}})
	argoCDDoes(t, apps["a-03"], map[string]any{"health": map[string]any{"status": "Healthy", "message": ""}})
	require.Eventually(t, func() bool {
		fs = &fleetv1alpha1.FleetStage{}
		return env.Client.Get(ctx, f.fleetKey, fs) == nil && fs.Status.Applications == nil &&
			!meta.IsStatusConditionTrue(fs.Status.Conditions, fleetv1alpha1.DriftedCondition)
	}, 30*time.Second, tick, "the report did not clear: %+v", fs.Status.Applications)
	require.Eventually(t, func() bool {
		return description("fleet.a-00") == "" && description("fleet.a-03") == ""
	}, 30*time.Second, tick, "the target Stages' descriptions stayed: %q", description("fleet.a-03"))
}

func mustStage(t *testing.T, promotion string) string {
	t.Helper()
	stage, ok := argocd.PromotionStage(promotion)
	require.True(t, ok, promotion)
	return stage
}

func cfgJSON(t *testing.T, v any) *apiextensionsv1.JSON {
	t.Helper()
	raw, err := json.Marshal(v)
	require.NoError(t, err)
	return &apiextensionsv1.JSON{Raw: raw}
}

// TestApplicationChangesAreRevertedUnderRevert: with spec.policy.drift
// Revert, a sync made in Argo CD is undone by promoting the intended
// Freight to the target again, once, which syncs the Application back
// through Kargo; a live resource edit on an Application whose Argo CD
// self-heal is on is left to Argo CD.
func TestApplicationChangesAreRevertedUnderRevert(t *testing.T) {
	ctx := context.Background()
	f := newFleet(t, "app-revert", fleetSpec{targets: inline("r", 2, nil, nil), waves: []fleetv1alpha1.Wave{{Name: "all"}},
		policy: fleetv1alpha1.FleetPolicy{Drift: fleetv1alpha1.DriftRevert},
		steps: []kargo.PromotionStep{{Uses: "argocd-update", As: "sync",
			Config: cfgJSON(t, map[string]any{"apps": []any{map[string]any{"name": "${{ ctx.project }}-guestbook-${{ vars.fleetTargetId }}"}}})}}})
	manual, healing := applicationOf(t, f, "r-00"), applicationOf(t, f, "r-01")
	// r-01's Application heals itself in Argo CD.
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(argocd.GroupVersion.WithKind(argocd.ApplicationKind))
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: kargo.ArgoCDDefaultNamespace, Name: healing}, u))
	require.NoError(t, unstructured.SetNestedField(u.Object, true, "spec", "syncPolicy", "automated", "selfHeal"))
	require.NoError(t, env.Client.Update(ctx, u))
	f.ship(f.good)
	f.rollout(f.good, fleetv1alpha1.RolloutSucceeded)

	argoCDDoes(t, manual, map[string]any{"operationState": map[string]any{"phase": "Succeeded",
		"operation":  map[string]any{"initiatedBy": map[string]any{"username": "alice"}, "info": nil},
		"syncResult": map[string]any{"revision": "0ld"}}})
	argoCDDoes(t, healing, map[string]any{"sync": map[string]any{"status": "OutOfSync"}})

	reverts := func(stage string) []kargo.Promotion {
		list := &kargo.PromotionList{}
		require.NoError(t, env.Client.List(ctx, list, client.InNamespace(f.ns), client.HasLabels{"fleet.kargo-fleet.io/reverts-drift"}))
		var out []kargo.Promotion
		for _, p := range list.Items {
			if p.Spec.Stage == stage {
				out = append(out, p)
			}
		}
		return out
	}
	require.Eventually(t, func() bool {
		r := reverts("fleet.r-00")
		return len(r) == 1 && r[0].Status.Phase == kargo.PromotionSucceeded
	}, 30*time.Second, tick, "the manual sync was not reverted")
	require.Equal(t, f.good, reverts("fleet.r-00")[0].Spec.Freight, "the intended Freight, promoted again")
	// Synced back through Kargo by the revert: the report clears, and the
	// self-healing Application's edit is reported but left to Argo CD.
	require.Eventually(t, func() bool {
		fs := &fleetv1alpha1.FleetStage{}
		if env.Client.Get(ctx, f.fleetKey, fs) != nil || fs.Status.Applications == nil {
			return false
		}
		a := fs.Status.Applications
		return a.Foreign == 1 && a.Examples[0].Target == "r-01" && a.Examples[0].Reason == "OutOfSync"
	}, 30*time.Second, tick, "the reverted Application was still reported, or the self-healing one was not")
	time.Sleep(3 * time.Second)
	require.Empty(t, reverts("fleet.r-01"), "Argo CD's self-heal undoes a live edit: no revert races it")
	require.Len(t, reverts("fleet.r-00"), 1, "reverted once")
	f.kargoEvent("Stage", "fleet.r-00", "DriftReverted", "its Argo CD Application changed outside the fleet")
}

// TestApplicationsUnreadableSomewhereHurtNothing: --argocd-namespaces names
// a namespace where the controller's RBAC grants no Application reads. The
// controller starts, reads the Applications where it may, and the version
// refresh goes on: an informer the API server refuses would never sync,
// and a read of it would wait for ever.
func TestApplicationsUnreadableSomewhereHurtNothing(t *testing.T) {
	ctx := context.Background()
	require.NoError(t, env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "argocd-no-access"}}))
	require.NoError(t, env.StopController())
	t.Cleanup(func() {
		_ = env.StopController()
		require.NoError(t, env.StartController(), "the next test needs a controller")
	})
	require.NoError(t, env.StartControllerWith(func(o *manager.Options) {
		o.ArgoCDNamespaces = []string{kargo.ArgoCDDefaultNamespace, "argocd-no-access"}
	}))
	f := newFleet(t, "app-partial-rbac", fleetSpec{targets: inline("p", 2, nil, nil), waves: []fleetv1alpha1.Wave{{Name: "all"}},
		steps: []kargo.PromotionStep{{Uses: "argocd-update", As: "sync",
			Config: cfgJSON(t, map[string]any{"apps": []any{map[string]any{"name": "${{ ctx.project }}-guestbook-${{ vars.fleetTargetId }}"}}})}}})
	app := applicationOf(t, f, "p-00")
	applicationOf(t, f, "p-01")
	f.ship(f.good)
	f.rollout(f.good, fleetv1alpha1.RolloutSucceeded)
	argoCDDoes(t, app, map[string]any{"health": map[string]any{"status": "Degraded", "message": "broken"}})
	require.Eventually(t, func() bool {
		fs := &fleetv1alpha1.FleetStage{}
		return env.Client.Get(ctx, f.fleetKey, fs) == nil && fs.Status.Applications != nil && fs.Status.Applications.Broken == 1 &&
			len(fs.Status.Versions) > 0
	}, 30*time.Second, tick, "the Applications where the controller may read them were not reported")
}
