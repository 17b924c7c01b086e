//go:build e2eargocd

package e2eargocd_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/drift"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/render"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

// reportBound is how soon a change of a target's Application must show in
// the FleetStage's status.applications.
const reportBound = 30 * time.Second

// authorizedStageKey is the annotation as a JSON pointer token.
const authorizedStagePointer = "/metadata/annotations/kargo.akuity.io~1authorized-stage"

// TestArgoCDDriftReported: a fleet of 8 targets (4 clusters x 2 namespaces)
// runs v1, then v2, through real syncs. Then, each on its own target, done
// for real: a manual sync of an older revision in Argo CD and a rollback to
// the Application's history (Foreign, ManualSync); automated sync turned on
// with the Application's revision changed by hand (Foreign, AutomatedSync);
// a live resource edited on the destination cluster (Foreign, OutOfSync);
// another Kargo Stage's argocd-update on a target's Application, refused by
// Kargo without the annotation and reported once it is authorized
// (Foreign, OtherKargoStage); the bad revision rolled out to one target
// (Broken, Degraded). Each must show in status.applications within 30 s;
// the Drifted condition, the target Stage's description and the
// ApplicationChanged Event say so too, and the untouched targets show
// nothing.
func TestArgoCDDriftReported(t *testing.T) {
	scenario(t)
	f := newArgoFleet(t, "drift", fleetOptions{
		namespaces: 2,
		ring: func(tg target) string {
			if tg.id == "d2-team-b" {
				return "first"
			}
			return "rest"
		},
		waves: []fleetv1alpha1.Wave{
			{Name: "first", Selector: ring("first"), MaxFailures: testutil.Int(0)},
			{Name: "rest", Selector: ring("rest"), MaxConcurrent: all()},
		},
	})
	// Users change these Applications by hand: the ApplicationSet must not
	// put their sync policy and authorized-stage annotation back.
	f.ignoreApplicationDifferences("/spec/source/targetRevision", "/spec/syncPolicy", authorizedStagePointer)
	f.rollOut("v1", "first")
	f.rollOut("v2", "first")
	v1, v2 := f.revs["v1"], f.revs["v2"]

	// 1a. A manual sync of an older revision, as `argocd app sync
	// --revision` sets it.
	tg := f.target("d1-team-a")
	start := time.Now()
	patchApp(t, tg.app, map[string]any{"operation": map[string]any{
		"initiatedBy": map[string]any{"username": "alice"},
		"sync":        map[string]any{"revision": v1, "syncStrategy": map[string]any{"hook": map[string]any{}}},
		"retry":       map[string]any{},
	}})
	d := f.awaitApplicationDrift(tg, drift.ClassForeign, manualSyncReasons, start)
	f.checkManualSync(tg, d, "alice", v1)
	f.requireDeployed("v1", []string{tg.id})
	f.requireAnnounced(tg, d, start)
	fs := f.fleetStage()
	cond := meta.FindStatusCondition(fs.Status.Conditions, fleetv1alpha1.DriftedCondition)
	require.NotNil(t, cond)
	require.Equal(t, []string{"True", fleetv1alpha1.ApplicationsChangedReason}, []string{string(cond.Status), cond.Reason}, cond.Message)
	report(t, "case=manual_sync target=%s drifted_condition=%q", tg.id, cond.Message)

	// 1b. A rollback to the Application's history entry of v1, as Argo
	// CD's API server sets it for `argocd app rollback`.
	tg = f.target("d1-team-b")
	app := getApp(t, tg.app)
	hist, _, _ := unstructured.NestedSlice(app.Object, "status", "history")
	var entry map[string]any
	for _, h := range hist {
		if m := h.(map[string]any); m["revision"] == v1 {
			entry = m
		}
	}
	require.NotNil(t, entry, "Application %s has no history entry of v1 (%s): %v", tg.app, v1, hist)
	start = time.Now()
	patchApp(t, tg.app, map[string]any{"operation": map[string]any{
		"initiatedBy": map[string]any{"username": "bob"},
		"sync": map[string]any{"revision": entry["revision"], "source": entry["source"],
			"syncStrategy": map[string]any{"apply": map[string]any{}}},
	}})
	d = f.awaitApplicationDrift(tg, drift.ClassForeign, manualSyncReasons, start)
	f.checkManualSync(tg, d, "bob", v1)
	f.requireDeployed("v1", []string{tg.id})
	report(t, "case=rollback target=%s history_id=%v", tg.id, entry["id"])

	// 2. Automated sync turned on and the revision changed by hand.
	tg = f.target("d2-team-a")
	start = time.Now()
	patchApp(t, tg.app, map[string]any{"spec": map[string]any{
		"syncPolicy": map[string]any{"automated": map[string]any{}},
		"source":     map[string]any{"targetRevision": "v1"},
	}})
	d = f.awaitApplicationDrift(tg, drift.ClassForeign, []string{drift.ReasonAutomatedSync}, start)
	require.Contains(t, d.Message, v1)
	f.requireDeployed("v1", []string{tg.id})
	report(t, "case=automated_sync target=%s reasons_seen=%s", tg.id, f.reasonsSeen(tg))

	// 3. A live resource edited on the destination cluster.
	tg = f.target("d3-team-a")
	start = time.Now()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: tg.destNS, Name: "web-config"}}
	require.NoError(t, clusters[tg.cluster].Patch(context.Background(), cm,
		client.RawPatch(types.MergePatchType, []byte(`{"data":{"version":"edited-by-hand"}}`))))
	d = f.awaitApplicationDrift(tg, drift.ClassForeign, []string{drift.ReasonOutOfSync}, start)
	require.Contains(t, d.Message, v2)
	report(t, "case=live_edit target=%s reasons_seen=%s", tg.id, f.reasonsSeen(tg))

	// 4. Another Kargo Stage of the Project whose argocd-update names a
	// target's Application: refused while the annotation names the target
	// Stage only, deployed and reported once it names both.
	tg = f.target("d4-team-a")
	other := "other"
	var steps []kargo.PromotionStep
	require.NoError(t, json.Unmarshal([]byte(strings.ReplaceAll(perTargetSteps, "${{ vars.app }}", tg.app)), &steps))
	require.NoError(t, hub.Create(context.Background(), &kargo.Stage{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: other},
		Spec: kargo.StageSpec{
			Vars: []kargo.ExpressionVariable{{Name: "gitURL", Value: cfg.gitURL}, {Name: "freightRepo", Value: freightRepo}},
			RequestedFreight: []kargo.FreightRequest{{Origin: kargo.FreightOrigin{Kind: kargo.OriginKindWarehouse, Name: warehouse},
				Sources: kargo.FreightSources{Direct: true}}},
			PromotionTemplate: &kargo.PromotionTemplate{Spec: kargo.PromotionTemplateSpec{Steps: steps}},
		},
	}))
	p := f.promoteStage(other, "v1")
	require.Contains(t, []kargo.PromotionPhase{kargo.PromotionErrored, kargo.PromotionFailed}, p.Status.Phase, p.Status.Message)
	require.Contains(t, p.Status.Message, "is not authorized")
	report(t, "case=other_stage_refused promotion=%s phase=%s message=%q", p.Name, p.Status.Phase, p.Status.Message)
	app = getApp(t, tg.app)
	tr, _, _ := unstructured.NestedString(app.Object, "spec", "source", "targetRevision")
	require.Equal(t, v2, tr, "the refused Promotion changed the Application")

	authorized := app.GetAnnotations()[kargo.AuthorizedStageAnnotation] + "," + f.ns + ":" + other
	patchApp(t, tg.app, map[string]any{"metadata": map[string]any{"annotations": map[string]any{kargo.AuthorizedStageAnnotation: authorized}}})
	start = time.Now()
	p = f.promoteStage(other, "v1")
	require.Equal(t, kargo.PromotionSucceeded, p.Status.Phase, p.Status.Message)
	d = f.awaitApplicationDrift(tg, drift.ClassForeign, []string{drift.ReasonOtherStage}, start)
	require.Contains(t, d.Message, p.Name)
	f.requireDeployed("v1", []string{tg.id})
	report(t, "case=other_stage_authorized promotion=%s annotation=%q", p.Name, authorized)

	// 5. The bad revision through the fleet's first wave (one target): the
	// Application turns Degraded.
	tg = f.target("d2-team-b")
	f.newFreight("bad")
	f.promote("bad", "first")
	var degraded time.Time
	f.eventually(func() bool {
		var ok bool
		degraded, ok = f.w.firstAt(tg.app, time.Time{}, func(s appState) bool { return s.health == "Degraded" })
		return ok
	}, "Application %s never turned Degraded", tg.app)
	d = f.awaitApplicationDrift(tg, drift.ClassBroken, []string{drift.ReasonDegraded}, degraded)
	report(t, "case=degraded target=%s (timed from the Application first seen Degraded)", tg.id)

	// The untouched targets show nothing.
	fs = f.fleetStage()
	require.NotNil(t, fs.Status.Applications)
	for _, ex := range fs.Status.Applications.Examples {
		require.NotContains(t, []string{"d3-team-b", "d4-team-b"}, ex.Target, "an untouched target is reported: %+v", ex)
	}
	report(t, "applications foreign=%d broken=%d intended=%d", fs.Status.Applications.Foreign, fs.Status.Applications.Broken,
		fs.Status.Applications.Intended)
	require.EqualValues(t, 5, fs.Status.Applications.Foreign)
	require.EqualValues(t, 1, fs.Status.Applications.Broken)
}

// TestArgoCDDriftReverted: under spec.policy.drift Revert, a manual sync of
// an older revision in Argo CD on one target of 4 is undone: kargo-fleet
// promotes the intended Freight to that target again (a Promotion labelled
// fleet.kargo-fleet.io/reverts-drift), the Promotion succeeds, the
// destination runs the intended version again and the report clears.
func TestArgoCDDriftReverted(t *testing.T) {
	scenario(t)
	f := newArgoFleet(t, "revert", fleetOptions{
		namespaces: 1,
		ring:       func(target) string { return "all" },
		waves:      []fleetv1alpha1.Wave{{Name: "all", Selector: ring("all"), MaxConcurrent: all()}},
		policy:     fleetv1alpha1.FleetPolicy{Drift: fleetv1alpha1.DriftRevert},
	})
	f.rollOut("v2", "all")
	tg := f.target("d1-team-a")
	stage := render.TargetStageName(fleetName, tg.id)
	start := time.Now()
	patchApp(t, tg.app, map[string]any{"operation": map[string]any{
		"initiatedBy": map[string]any{"username": "alice"},
		"sync":        map[string]any{"revision": f.revs["v1"], "syncStrategy": map[string]any{"hook": map[string]any{}}},
	}})
	// The foreign sync ends (Argo CD's operation state names alice), then
	// the revert Promotion appears; the suite reads both every tick.
	var synced time.Time
	var revert *kargo.Promotion
	f.eventually(func() bool {
		if synced.IsZero() {
			app := getApp(t, tg.app)
			by, _, _ := unstructured.NestedString(app.Object, "status", "operationState", "operation", "initiatedBy", "username")
			ph, _, _ := unstructured.NestedString(app.Object, "status", "operationState", "phase")
			if by == "alice" && ph == "Succeeded" {
				synced = time.Now()
			}
		}
		list := &kargo.PromotionList{}
		if hub.List(context.Background(), list, client.InNamespace(f.ns), client.HasLabels{fleetv1alpha1.RevertLabel}) != nil {
			return false
		}
		for i := range list.Items {
			if list.Items[i].Spec.Stage == stage {
				revert = &list.Items[i]
				return true
			}
		}
		return false
	}, "no revert Promotion of %s", tg.id)
	revertSeen := time.Now()
	if synced.IsZero() {
		// The manual sync ended and the revert began within one read.
		synced = revertSeen
	}
	require.Equal(t, f.freight["v2"], revert.Spec.Freight)
	f.eventually(func() bool {
		p := &kargo.Promotion{}
		if hub.Get(context.Background(), client.ObjectKeyFromObject(revert), p) != nil {
			return false
		}
		revert = p
		return p.Status.Phase.IsTerminal()
	}, "the revert Promotion %s never ended", revert.Name)
	require.Equal(t, kargo.PromotionSucceeded, revert.Status.Phase, revert.Status.Message)
	succeeded := time.Now()
	f.requireDeployed("v2", []string{tg.id})
	deployed := time.Now()
	var cleared time.Time
	f.eventually(func() bool {
		fs := f.fleetStage()
		if fs.Status.Applications != nil {
			for _, ex := range fs.Status.Applications.Examples {
				if ex.Target == tg.id {
					return false
				}
			}
		}
		cleared = time.Now()
		return true
	}, "the report of %s never cleared", tg.id)
	list := &kargo.PromotionList{}
	require.NoError(t, hub.List(context.Background(), list, client.InNamespace(f.ns), client.HasLabels{fleetv1alpha1.RevertLabel}))
	require.Len(t, list.Items, 1, "one revert Promotion")
	require.Equal(t, stage, list.Items[0].Spec.Stage)
	report(t, "case=revert target=%s promotion=%s manual_sync_to_synced=%s synced_to_revert_promotion_seen=%s revert_promotion_to_succeeded=%s "+
		"manual_sync_to_intended_running=%s report_cleared_after=%s", tg.id, revert.Name, round(synced.Sub(start)), round(revertSeen.Sub(synced)),
		round(succeeded.Sub(revertSeen)), round(deployed.Sub(start)), round(cleared.Sub(start)))
}

// TestArgoCDApplicationSetFromTargets: the pipeline of docs/argocd.md
// ("Generating the Applications"), run as written: `kargo-fleet targets -o
// json | jq | kubectl patch` fills the list generator of an ApplicationSet
// built like examples/argocd/guestbook-applicationset.yaml, for a FleetStage
// whose targets are the lane's Argo CD cluster Secrets. One Application per
// target authorizes its target Stage, and a rollout through them succeeds.
func TestArgoCDApplicationSetFromTargets(t *testing.T) {
	scenario(t)
	ctx := ctxT(t)
	for _, tool := range []string{"jq", "kubectl"} {
		_, err := exec.LookPath(tool)
		require.NoError(t, err, "the pipeline needs %s", tool)
	}
	f := &argoFleet{t: t, ns: "acd-appset-" + randomSuffix(), revs: gitRevs(t), freight: map[string]string{}}
	report(t, "project=%s", f.ns)
	createProject(t, f.ns)
	appPrefix := f.ns
	steps := []kargo.PromotionStep{}
	require.NoError(t, json.Unmarshal([]byte(strings.ReplaceAll(perTargetSteps, "${{ vars.app }}", appPrefix+"-${{ vars.fleetTargetId }}")), &steps))
	require.NoError(t, hub.Create(ctx, &kargo.Stage{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "prod"},
		Spec: kargo.StageSpec{
			Vars: []kargo.ExpressionVariable{{Name: "gitURL", Value: cfg.gitURL}, {Name: "freightRepo", Value: freightRepo}},
			RequestedFreight: []kargo.FreightRequest{{Origin: kargo.FreightOrigin{Kind: kargo.OriginKindWarehouse, Name: warehouse},
				Sources: kargo.FreightSources{Direct: true}}},
			PromotionTemplate: &kargo.PromotionTemplate{Spec: kargo.PromotionTemplateSpec{Steps: steps}},
		},
	}))
	require.NoError(t, hub.Create(ctx, &fleetv1alpha1.FleetStage{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: fleetName},
		Spec: fleetv1alpha1.FleetStageSpec{
			Stage: fleetv1alpha1.StageSource{FromStage: "prod"},
			Targets: fleetv1alpha1.TargetsSpec{Sources: []fleetv1alpha1.TargetSource{{Kind: fleetv1alpha1.ArgoCDClusterSource,
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{clusterLabel: "true"}}}}},
			Waves: []fleetv1alpha1.Wave{{Name: "all", MaxConcurrent: all()}},
		},
	}))
	f.eventually(func() bool {
		return meta.IsStatusConditionTrue(f.fleetStage().Status.Conditions, fleetv1alpha1.ReadyCondition)
	}, "the FleetStage never became Ready")

	// The ApplicationSet of the example, on the lane's repository and
	// clusters: its list generator is what the pipeline writes.
	as := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "ApplicationSet",
		"metadata": map[string]any{"name": f.ns, "namespace": "argocd"},
		"spec": map[string]any{
			"goTemplate":        true,
			"goTemplateOptions": []any{"missingkey=error"},
			// Kargo's argocd-update pins the revision (updateTargetRevision).
			"ignoreApplicationDifferences": []any{map[string]any{"jsonPointers": []any{"/spec/source/targetRevision"}}},
			"generators":                   []any{map[string]any{"list": map[string]any{"elements": []any{}}}},
			"template": map[string]any{
				"metadata": map[string]any{
					"name":        appPrefix + "-{{ .id }}",
					"labels":      map[string]any{projectLabel: f.ns},
					"annotations": map[string]any{kargo.AuthorizedStageAnnotation: "{{ .authorizedStage }}"},
				},
				"spec": map[string]any{
					"project":     "default",
					"source":      map[string]any{"repoURL": cfg.gitURL, "targetRevision": "v1", "path": "app"},
					"destination": map[string]any{"server": "{{ .server }}", "namespace": f.ns},
					"syncPolicy":  map[string]any{"syncOptions": []any{"CreateNamespace=true"}},
				},
			},
		},
	}}
	require.NoError(t, hub.Create(ctx, as))
	t.Cleanup(func() {
		if t.Failed() || cfg.keep {
			return
		}
		_ = client.IgnoreNotFound(hub.Delete(context.Background(), as))
		app := &unstructured.Unstructured{}
		app.SetAPIVersion("argoproj.io/v1alpha1")
		app.SetKind("Application")
		_ = hub.DeleteAllOf(context.Background(), app, client.InNamespace("argocd"), client.MatchingLabels{projectLabel: f.ns})
	})

	bin := filepath.Join(t.TempDir(), "kargo-fleet")
	build := exec.Command("go", "build", "-o", bin, "../../cmd/kargo-fleet")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build ./cmd/kargo-fleet: %s", out)
	// docs/argocd.md, "Generating the Applications", with this Project's
	// names.
	pipeline := fmt.Sprintf(`set -o pipefail
%s targets %s -n %s -o json |
  jq '{spec: {generators: [{list: {elements: [.targets[] |
        {id, authorizedStage, server: .params.server}]}}]}}' |
  kubectl -n argocd patch applicationset %s --type merge --patch-file /dev/stdin`, bin, fleetName, f.ns, f.ns)
	start := time.Now()
	sh := exec.Command("bash", "-c", pipeline)
	sh.Env = append(os.Environ(), "KUBECONFIG="+cfg.hubKubeconfig)
	out, err = sh.CombinedOutput()
	require.NoError(t, err, "%s\n%s", pipeline, out)
	report(t, "pipeline_output=%q", strings.TrimSpace(string(out)))

	var listed struct {
		Targets []struct {
			Stage, AuthorizedStage, ID string
			Params                     map[string]string
		}
	}
	js := exec.Command(bin, "targets", fleetName, "-n", f.ns, "-o", "json")
	js.Env = sh.Env
	out, err = js.Output()
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(out, &listed))
	secrets := &corev1.SecretList{}
	require.NoError(t, hub.List(ctx, secrets, client.InNamespace("argocd"), client.MatchingLabels{clusterLabel: "true"}))
	require.Len(t, listed.Targets, len(secrets.Items), "one target per lane cluster Secret")
	servers := map[string]string{}
	for _, s := range secrets.Items {
		servers[string(s.Data["server"])] = string(s.Data["name"])
	}
	f.eventually(func() bool { return len(f.apps()) == len(listed.Targets) }, "the ApplicationSet never made %d Applications", len(listed.Targets))
	madeIn := time.Since(start)
	var summary []string
	for _, tg := range listed.Targets {
		app := getApp(t, appPrefix+"-"+tg.ID)
		require.Equal(t, f.ns+":"+tg.Stage, app.GetAnnotations()[kargo.AuthorizedStageAnnotation], "Application %s", app.GetName())
		require.Equal(t, tg.AuthorizedStage, app.GetAnnotations()[kargo.AuthorizedStageAnnotation])
		require.Equal(t, render.TargetStageName(fleetName, tg.ID), tg.Stage)
		st := &kargo.Stage{}
		require.NoError(t, hub.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: tg.Stage}, st), "target Stage %s", tg.Stage)
		server, _, _ := unstructured.NestedString(app.Object, "spec", "destination", "server")
		require.Equal(t, tg.Params["server"], server)
		require.Contains(t, servers, server, "Application %s deploys to no lane cluster", app.GetName())
		f.targets = append(f.targets, target{id: tg.ID, cluster: servers[server], app: app.GetName(), destNS: f.ns})
		summary = append(summary, app.GetName()+"="+tg.AuthorizedStage)
	}
	sort.Strings(summary)
	report(t, "applications=%d made_in=%s %s", len(summary), round(madeIn), strings.Join(summary, " "))

	// The Applications let the fleet deploy: a rollout of v2 through them.
	f.rollOut("v2", "all")
}

// manualSyncReasons: a sync started in Argo CD is ManualSync, though Argo
// CD's application controller merges the new operation into
// status.operationState and keeps the previous Kargo sync's Promotion info
// beside the user's initiatedBy.
var manualSyncReasons = []string{drift.ReasonManualSync}

// checkManualSync checks that a manual sync by user of rev was reported as
// such, and prints the operation Argo CD left.
func (f *argoFleet) checkManualSync(tg target, d fleetv1alpha1.ApplicationDrift, user, rev string) {
	f.t.Helper()
	app := getApp(f.t, tg.app)
	by, _, _ := unstructured.NestedString(app.Object, "status", "operationState", "operation", "initiatedBy", "username")
	require.Equal(f.t, user, by, "the Application's last operation")
	info, _, _ := unstructured.NestedSlice(app.Object, "status", "operationState", "operation", "info")
	require.Equal(f.t, drift.ReasonManualSync, d.Reason, "%+v", d)
	require.Contains(f.t, d.Message, user)
	report(f.t, "target=%s manual_sync_reported_as=%s/%s operation_state_initiated_by=%s operation_state_info=%v",
		tg.id, d.Class, d.Reason, by, info)
}

// rollOut creates the Freight of tag, promotes it into wave and waits for
// the rollout to succeed and every target to run it.
func (f *argoFleet) rollOut(tag, wave string) {
	f.t.Helper()
	f.newFreight(tag)
	start := time.Now()
	f.promote(tag, wave)
	ro := f.await(tag, forward, fleetv1alpha1.RolloutSucceeded, fleetv1alpha1.RolloutFailed, fleetv1alpha1.RolloutHalted)
	require.Equal(f.t, fleetv1alpha1.RolloutSucceeded, ro.Status.Phase, ro.Status.Message)
	f.requireDeployed(tag, nil)
	report(f.t, "rollout=%s tag=%s targets=%d took=%s", ro.Name, tag, len(f.targets), round(time.Since(start)))
}

func (f *argoFleet) target(id string) target {
	f.t.Helper()
	for _, tg := range f.targets {
		if tg.id == id {
			return tg
		}
	}
	require.FailNow(f.t, "no target "+id)
	return target{}
}

func (f *argoFleet) fleetStage() *fleetv1alpha1.FleetStage {
	fs := &fleetv1alpha1.FleetStage{}
	if err := hub.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: fleetName}, fs); err != nil {
		f.t.Logf("reading the FleetStage: %v", err)
	}
	return fs
}

// ignoreApplicationDifferences sets the JSON pointers the fleet's
// ApplicationSet leaves alone on its Applications.
func (f *argoFleet) ignoreApplicationDifferences(pointers ...string) {
	f.t.Helper()
	ps := make([]any, 0, len(pointers))
	for _, p := range pointers {
		ps = append(ps, p)
	}
	as := &unstructured.Unstructured{}
	as.SetAPIVersion("argoproj.io/v1alpha1")
	as.SetKind("ApplicationSet")
	as.SetNamespace("argocd")
	as.SetName(f.ns)
	raw, err := json.Marshal(map[string]any{"spec": map[string]any{"ignoreApplicationDifferences": []any{map[string]any{"jsonPointers": ps}}}})
	require.NoError(f.t, err)
	require.NoError(f.t, hub.Patch(context.Background(), as, client.RawPatch(types.MergePatchType, raw)))
}

func getApp(t *testing.T, name string) *unstructured.Unstructured {
	t.Helper()
	app := &unstructured.Unstructured{}
	app.SetAPIVersion("argoproj.io/v1alpha1")
	app.SetKind("Application")
	require.NoError(t, hub.Get(context.Background(), client.ObjectKey{Namespace: "argocd", Name: name}, app))
	return app
}

// patchApp merge-patches an Application in the hub, as Argo CD's API server
// or kubectl would.
func patchApp(t *testing.T, name string, patch map[string]any) {
	t.Helper()
	raw, err := json.Marshal(patch)
	require.NoError(t, err)
	app := &unstructured.Unstructured{}
	app.SetAPIVersion("argoproj.io/v1alpha1")
	app.SetKind("Application")
	app.SetNamespace("argocd")
	app.SetName(name)
	require.NoError(t, hub.Patch(context.Background(), app, client.RawPatch(types.MergePatchType, raw)))
}

// awaitApplicationDrift waits at most reportBound after since for the
// FleetStage's status.applications to name tg's Application with class and
// reason, and reports how long it took. It keeps every reason it saw of the
// target on the way (reasonsSeen).
func (f *argoFleet) awaitApplicationDrift(tg target, class drift.Class, want []string, since time.Time) fleetv1alpha1.ApplicationDrift {
	f.t.Helper()
	var last string
	for end := since.Add(reportBound); time.Now().Before(end); time.Sleep(tick) {
		fs := f.fleetStage()
		if fs.Status.Applications == nil {
			last = "no status.applications"
			continue
		}
		for _, ex := range fs.Status.Applications.Examples {
			if ex.Target != tg.id {
				continue
			}
			f.noteReason(tg, ex.Class+"/"+ex.Reason)
			last = fmt.Sprintf("%s/%s: %s", ex.Class, ex.Reason, ex.Message)
			if ex.Class == string(class) && slices.Contains(want, ex.Reason) {
				reason := ex.Reason
				took := time.Since(since)
				require.Equal(f.t, "argocd/"+tg.app, ex.Application)
				require.Equal(f.t, render.TargetStageName(fleetName, tg.id), ex.Stage)
				f.t.Logf("report: %s %s/%s after %s: %s", tg.id, class, reason, round(took), ex.Message)
				report(f.t, "target=%s class=%s reason=%s reported_after=%s message=%q", tg.id, class, reason, round(took), ex.Message)
				return ex
			}
		}
	}
	require.FailNow(f.t, fmt.Sprintf("target %s: no %s/%v in status.applications within %s (last: %s); the Application:\n%s",
		tg.id, class, want, reportBound, last, f.w.dump([]string{tg.app})))
	return fleetv1alpha1.ApplicationDrift{}
}

var reasons = map[string][]string{}

func (f *argoFleet) noteReason(tg target, r string) {
	k := f.ns + "/" + tg.id
	if rs := reasons[k]; len(rs) == 0 || rs[len(rs)-1] != r {
		reasons[k] = append(rs, r)
	}
}

func (f *argoFleet) reasonsSeen(tg target) string {
	return strings.Join(reasons[f.ns+"/"+tg.id], ">")
}

// requireAnnounced checks the target Stage's description and the
// ApplicationChanged Event of d, recorded after since.
func (f *argoFleet) requireAnnounced(tg target, d fleetv1alpha1.ApplicationDrift, since time.Time) {
	f.t.Helper()
	stage := render.TargetStageName(fleetName, tg.id)
	want := fmt.Sprintf("Argo CD: argocd/%s %s (%s): ", tg.app, strings.ToLower(d.Class), d.Reason)
	var desc string
	f.eventuallyWithin(reportBound, func() bool {
		st := &kargo.Stage{}
		if hub.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: stage}, st) != nil {
			return false
		}
		desc = st.Annotations[kargo.DescriptionAnnotation]
		return strings.HasPrefix(desc, want)
	}, "target Stage %s's description is %q, not %q...", stage, &desc, want)
	var note string
	f.eventuallyWithin(reportBound, func() bool {
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion("events.k8s.io/v1")
		list.SetKind("EventList")
		if hub.List(context.Background(), list, client.InNamespace(f.ns)) != nil {
			return false
		}
		for _, e := range list.Items {
			r, _, _ := unstructured.NestedString(e.Object, "reason")
			n, _, _ := unstructured.NestedString(e.Object, "note")
			if e.GetCreationTimestamp().Time.Before(since.Truncate(time.Second)) {
				continue
			}
			if r == "ApplicationChanged" && strings.Contains(n, tg.app) && strings.Contains(n, d.Reason) {
				note = n
				return true
			}
		}
		return false
	}, "no ApplicationChanged Event of %s", tg.app)
	report(f.t, "target=%s description=%q event=%q", tg.id, desc, note)
}

func (f *argoFleet) eventuallyWithin(d time.Duration, cond func() bool, msg string, args ...any) {
	f.t.Helper()
	require.Eventually(f.t, cond, d, tick, append([]any{msg}, args...)...)
}

// promoteStage promotes the Freight of tag (created when missing) into
// stage with a Promotion of its own and waits for it to end.
func (f *argoFleet) promoteStage(stage, tag string) *kargo.Promotion {
	f.t.Helper()
	if f.freight[tag] == "" {
		f.newFreight(tag)
	}
	var p *kargo.Promotion
	f.eventually(func() bool {
		p = kargo.NewPromotion(f.ns, stage, f.freight[tag], nil, nil)
		err := hub.Create(context.Background(), p)
		if err != nil {
			f.t.Logf("promoting %s into %s: %v", tag, stage, err)
		}
		return err == nil
	}, "the Promotion of %s into %s was never accepted", tag, stage)
	f.eventually(func() bool {
		got := &kargo.Promotion{}
		if hub.Get(context.Background(), client.ObjectKeyFromObject(p), got) != nil {
			return false
		}
		p = got
		return slices.Contains([]kargo.PromotionPhase{kargo.PromotionSucceeded, kargo.PromotionFailed, kargo.PromotionErrored,
			kargo.PromotionAborted}, p.Status.Phase)
	}, "the Promotion %s into %s never ended", p.Name, stage)
	return p
}

func randomSuffix() string {
	return fmt.Sprintf("%06x", time.Now().UnixNano()&0xffffff)
}
