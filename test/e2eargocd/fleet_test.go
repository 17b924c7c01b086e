//go:build e2eargocd

package e2eargocd_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/render"
)

const (
	fleetName = "fleet"
	warehouse = "apps"
	tick      = 250 * time.Millisecond
	// freightRepo names the lane's git repository in Freight. Kargo's
	// Warehouse accepts only http(s) and ssh repository URLs, while the
	// lane serves the repository with `git daemon` (git://): Freight names
	// the commit under this alias, and the per-target template hands its ID
	// to argocd-update for the Application's git:// source. The Warehouse
	// never polls it (freightCreationPolicy: Manual; the suite creates the
	// Freight).
	freightRepo = "https://git.lane.invalid/apps.git"
	// clusterLabel selects the lane's Argo CD cluster Secrets.
	clusterLabel = "lane.kargo-fleet.io/cluster"
	// projectLabel marks the Applications of one case's Project.
	projectLabel = "lane.kargo-fleet.io/project"
)

// versions are what each tag of the lane's repository deploys (the
// ConfigMap's version and the Pod template's annotation).
var versions = map[string]string{"v1": "1.0", "v2": "2.0", "bad": "3.0-bad", "errors": "4.0-errors", "syncfail": "2.0"}

// perTargetSteps is the per-target promotion template: Kargo's argocd-update
// on the target's Application (pinning its source to the Freight's commit and
// syncing it), then argocd-wait until it is Synced and Healthy. argocd-wait
// fails the Promotion when the health regresses to Degraded, and after its
// retry timeout when the Application never becomes Healthy.
const perTargetSteps = `[
 {"uses": "argocd-update", "as": "update", "config": {"apps": [{
   "name": "${{ vars.app }}", "namespace": "argocd",
   "sources": [{"repoURL": "${{ vars.gitURL }}", "desiredRevision": "${{ commitFrom(vars.freightRepo).ID }}", "updateTargetRevision": true}]}]}},
 {"uses": "argocd-wait", "as": "wait", "retry": {"timeout": "150s"}, "config": {"apps": [{
   "name": "${{ vars.app }}", "namespace": "argocd"}]}}]`

type target struct {
	id, cluster, ns string
	// app is the target's Argo CD Application; destNS its namespace on the
	// destination cluster.
	app, destNS string
	labels      map[string]string
}

type argoFleet struct {
	t       *testing.T
	ns      string
	targets []target
	// revs maps the repository's tags to commit IDs; freight maps them to
	// the names Kargo gave their Freight.
	revs    map[string]string
	freight map[string]string
	w       *watcher
}

type fleetOptions struct {
	namespaces int
	// ring labels each target; waves select on it.
	ring   func(target) string
	waves  []fleetv1alpha1.Wave
	policy fleetv1alpha1.FleetPolicy
	// analysis is the FleetStage's spec.analysis.
	analysis *fleetv1alpha1.FleetAnalysis
}

// newArgoFleet creates Project acd-<prefix>-<random> with a Warehouse, the
// adopted Stage "prod" running perTargetSteps, the ApplicationSet making one
// Application per target, and the FleetStage "fleet" over inline targets:
// every lane cluster Secret x opts.namespaces namespaces, labelled with the
// Secret's region and tier. It waits until the FleetStage is Ready and every
// Application exists.
func newArgoFleet(t *testing.T, prefix string, opts fleetOptions) *argoFleet {
	t.Helper()
	ctx := ctxT(t)
	suffix := make([]byte, 3)
	_, _ = rand.Read(suffix)
	f := &argoFleet{t: t, ns: "acd-" + prefix + "-" + hex.EncodeToString(suffix), revs: gitRevs(t), freight: map[string]string{}}
	report(t, "project=%s", f.ns)

	secrets := &corev1.SecretList{}
	require.NoError(t, hub.List(ctx, secrets, client.InNamespace("argocd"), client.MatchingLabels{clusterLabel: "true"}))
	require.GreaterOrEqual(t, len(secrets.Items), 4, "the lane registers at least 4 destination clusters")
	var nss []string
	for i := range opts.namespaces {
		nss = append(nss, fmt.Sprintf("team-%c", 'a'+i))
	}
	for _, s := range secrets.Items {
		c := string(s.Data["name"])
		require.Contains(t, clusters, c, "no kubeconfig for cluster %s in E2E_ARGOCD_CLUSTER_KUBECONFIGS", c)
		for _, ns := range nss {
			tg := target{id: c + "-" + ns, cluster: c, ns: ns, app: f.ns + "-" + c + "-" + ns, destNS: f.ns + "-" + ns,
				labels: map[string]string{"region": s.Labels["region"], "tier": s.Labels["tier"], "cluster": c}}
			tg.labels["ring"] = opts.ring(tg)
			f.targets = append(f.targets, tg)
		}
	}
	sort.Slice(f.targets, func(i, j int) bool { return f.targets[i].id < f.targets[j].id })

	createProject(t, f.ns)
	f.applicationSet(nss)
	var steps []kargo.PromotionStep
	require.NoError(t, json.Unmarshal([]byte(perTargetSteps), &steps))
	require.NoError(t, hub.Create(ctx, &kargo.Stage{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "prod"},
		Spec: kargo.StageSpec{
			Vars: []kargo.ExpressionVariable{{Name: "gitURL", Value: cfg.gitURL}, {Name: "freightRepo", Value: freightRepo}},
			RequestedFreight: []kargo.FreightRequest{{Origin: kargo.FreightOrigin{Kind: kargo.OriginKindWarehouse, Name: warehouse},
				Sources: kargo.FreightSources{Direct: true}}},
			PromotionTemplate: &kargo.PromotionTemplate{Spec: kargo.PromotionTemplateSpec{Steps: steps}},
		},
	}))
	inline := make([]fleetv1alpha1.InlineTarget, 0, len(f.targets))
	for _, tg := range f.targets {
		inline = append(inline, fleetv1alpha1.InlineTarget{Name: tg.id, Labels: tg.labels,
			Params: map[string]string{"app": tg.app, "destNamespace": tg.destNS}})
	}
	start := time.Now()
	require.NoError(t, hub.Create(ctx, &fleetv1alpha1.FleetStage{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: fleetName},
		Spec: fleetv1alpha1.FleetStageSpec{
			Stage:    fleetv1alpha1.StageSource{FromStage: "prod"},
			Targets:  fleetv1alpha1.TargetsSpec{Sources: []fleetv1alpha1.TargetSource{{Kind: fleetv1alpha1.InlineSource, Inline: inline}}},
			Waves:    opts.waves,
			Policy:   opts.policy,
			Analysis: opts.analysis,
		},
	}))
	f.eventually(func() bool {
		fs := &fleetv1alpha1.FleetStage{}
		return hub.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: fleetName}, fs) == nil &&
			meta.IsStatusConditionTrue(fs.Status.Conditions, fleetv1alpha1.ReadyCondition)
	}, "the FleetStage never became Ready")
	report(t, "fleetstage_ready=%s targets=%d clusters=%d namespaces_per_cluster=%d", time.Since(start).Round(100*time.Millisecond),
		len(f.targets), len(secrets.Items), opts.namespaces)
	f.eventually(func() bool { return len(f.apps()) == len(f.targets) }, "the ApplicationSet never made %d Applications", len(f.targets))
	f.w = startWatcher(t, f)
	return f
}

// applicationSet creates the ApplicationSet of the fleet's Applications:
// clusters x namespaces, each Application authorizing its target Stage
// (fleet.<cluster>-<namespace>: short names, so the template computes the
// annotation; docs/argocd.md). Kargo's argocd-update pins targetRevision,
// which the ApplicationSet controller is told to leave alone.
func (f *argoFleet) applicationSet(nss []string) {
	f.t.Helper()
	var elems []any
	for _, ns := range nss {
		elems = append(elems, map[string]any{"ns": ns})
	}
	as := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "ApplicationSet",
		"metadata": map[string]any{"name": f.ns, "namespace": "argocd"},
		"spec": map[string]any{
			"goTemplate":                   true,
			"goTemplateOptions":            []any{"missingkey=error"},
			"ignoreApplicationDifferences": []any{map[string]any{"jsonPointers": []any{"/spec/source/targetRevision"}}},
			"generators": []any{map[string]any{"matrix": map[string]any{"generators": []any{
				map[string]any{"clusters": map[string]any{"selector": map[string]any{"matchLabels": map[string]any{clusterLabel: "true"}}}},
				map[string]any{"list": map[string]any{"elements": elems}},
			}}}},
			"template": map[string]any{
				"metadata": map[string]any{
					"name":        f.ns + "-{{ .name }}-{{ .ns }}",
					"labels":      map[string]any{projectLabel: f.ns},
					"annotations": map[string]any{"kargo.akuity.io/authorized-stage": f.ns + ":" + fleetName + ".{{ .name }}-{{ .ns }}"},
				},
				"spec": map[string]any{
					"project":     "default",
					"source":      map[string]any{"repoURL": cfg.gitURL, "targetRevision": "v1", "path": "app"},
					"destination": map[string]any{"server": "{{ .server }}", "namespace": f.ns + "-{{ .ns }}"},
					"syncPolicy":  map[string]any{"syncOptions": []any{"CreateNamespace=true"}},
				},
			},
		},
	}}
	require.NoError(f.t, hub.Create(context.Background(), as))
	// Argo CD keeps reconciling every Application: a passed case removes
	// its own. The hub runs no garbage collector, so the Applications go
	// by label, not through their ApplicationSet's ownership. A failed case
	// keeps them to look at; its Project stays either way (namespaces do
	// not finish deleting without kube-controller-manager).
	f.t.Cleanup(func() {
		if f.t.Failed() || cfg.keep {
			return
		}
		ctx := context.Background()
		_ = client.IgnoreNotFound(hub.Delete(ctx, as))
		app := &unstructured.Unstructured{}
		app.SetAPIVersion("argoproj.io/v1alpha1")
		app.SetKind("Application")
		if err := hub.DeleteAllOf(ctx, app, client.InNamespace("argocd"), client.MatchingLabels{projectLabel: f.ns}); err != nil {
			f.t.Logf("deleting the Applications of %s: %v", f.ns, err)
		}
	})
}

// apps lists the fleet's Applications.
func (f *argoFleet) apps() []unstructured.Unstructured {
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("argoproj.io/v1alpha1")
	list.SetKind("ApplicationList")
	if err := hub.List(context.Background(), list, client.InNamespace("argocd"), client.MatchingLabels{projectLabel: f.ns}); err != nil {
		f.t.Logf("listing Applications: %v", err)
		return nil
	}
	return list.Items
}

func (f *argoFleet) eventually(cond func() bool, msg string, args ...any) {
	f.t.Helper()
	require.Eventually(f.t, cond, cfg.timeout, tick, append([]any{msg}, args...)...)
}

// gitRevs reads the lane repository's tags.
func gitRevs(t *testing.T) map[string]string {
	t.Helper()
	out, err := exec.Command("git", "ls-remote", "--tags", cfg.gitURL).Output()
	require.NoError(t, err, "git ls-remote %s", cfg.gitURL)
	revs := map[string]string{}
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		sha, ref, ok := strings.Cut(line, "\t")
		if ok && !strings.HasSuffix(ref, "^{}") {
			revs[strings.TrimPrefix(ref, "refs/tags/")] = sha
		}
	}
	for tag := range versions {
		require.NotEmpty(t, revs[tag], "the lane's repository has no tag %s", tag)
	}
	return revs
}

// newFreight creates the Freight of the repository's tag and remembers the
// name Kargo gave it.
func (f *argoFleet) newFreight(tag string) string {
	f.t.Helper()
	fr := &kargo.Freight{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: f.ns + "-" + tag},
		Alias:      tag,
		Origin:     kargo.FreightOrigin{Kind: kargo.OriginKindWarehouse, Name: warehouse},
		Commits: []apiextensionsv1.JSON{{Raw: fmt.Appendf(nil, `{"repoURL":%q,"id":%q,"branch":"main","tag":%q}`,
			freightRepo, f.revs[tag], tag)}},
	}
	require.NoError(f.t, hub.Create(context.Background(), fr))
	f.freight[tag] = fr.Name
	return fr.Name
}

// promote promotes the Freight of tag into the wave Stage of wave with
// `kargo promote` through Kargo's API server (E2E_ARGOCD_KARGO_CLI), else by
// creating the Promotion, retrying while Kargo does not offer it there yet.
func (f *argoFleet) promote(tag, wave string) {
	f.t.Helper()
	stage := render.WaveStageName(fleetName, wave)
	f.eventually(func() bool {
		if cfg.kargoCLI != "" {
			out, err := exec.Command(cfg.kargoCLI, "promote", "--project", f.ns, "--freight", f.freight[tag], "--stage", stage).CombinedOutput()
			if err != nil {
				f.t.Logf("kargo promote %s into %s: %v: %s", tag, stage, err, out)
			}
			return err == nil
		}
		err := hub.Create(context.Background(), kargo.NewPromotion(f.ns, stage, f.freight[tag], nil, nil))
		if err != nil {
			f.t.Logf("promoting %s into %s: %v", tag, stage, err)
		}
		return err == nil
	}, "the Promotion of %s into %s was never accepted", tag, stage)
}

func (f *argoFleet) rollout(freight string, dir fleetv1alpha1.RolloutDirection) *fleetv1alpha1.FleetRollout {
	list := &fleetv1alpha1.FleetRolloutList{}
	if err := hub.List(context.Background(), list, client.InNamespace(f.ns)); err != nil {
		return nil
	}
	for i := range list.Items {
		if ro := &list.Items[i]; ro.Spec.Freight.Name == freight && ro.Spec.Direction == dir {
			return ro
		}
	}
	return nil
}

// await waits for the rollout of tag's Freight in direction dir to reach one
// of phases.
func (f *argoFleet) await(tag string, dir fleetv1alpha1.RolloutDirection, phases ...fleetv1alpha1.RolloutPhase) *fleetv1alpha1.FleetRollout {
	f.t.Helper()
	var ro *fleetv1alpha1.FleetRollout
	for end := time.Now().Add(cfg.timeout); time.Now().Before(end); time.Sleep(tick) {
		if ro = f.rollout(f.freight[tag], dir); ro != nil && slices.Contains(phases, ro.Status.Phase) {
			return ro
		}
	}
	last := "none"
	if ro != nil {
		last = fmt.Sprintf("%s: %s", ro.Status.Phase, ro.Status.Message)
	}
	require.FailNow(f.t, fmt.Sprintf("no %s rollout of %s reached %v (last: %s)", dir, tag, phases, last))
	return nil
}

// requireDeployed checks, on the destination clusters themselves, that every
// target in ids (all when nil) runs tag: its Deployment's template and
// ConfigMap carry tag's version, the rollout is complete and Available.
func (f *argoFleet) requireDeployed(tag string, ids []string) {
	f.t.Helper()
	want := versions[tag]
	var last string
	f.eventually(func() bool {
		for _, tg := range f.targets {
			if ids != nil && !slices.Contains(ids, tg.id) {
				continue
			}
			c := clusters[tg.cluster]
			d := &appsv1.Deployment{}
			cm := &corev1.ConfigMap{}
			if err := c.Get(context.Background(), client.ObjectKey{Namespace: tg.destNS, Name: "web"}, d); err != nil {
				last = fmt.Sprintf("%s: %v", tg.id, err)
				return false
			}
			if err := c.Get(context.Background(), client.ObjectKey{Namespace: tg.destNS, Name: "web-config"}, cm); err != nil {
				last = fmt.Sprintf("%s: %v", tg.id, err)
				return false
			}
			got := d.Spec.Template.Annotations["lane.kargo-fleet.io/version"]
			if got != want || cm.Data["version"] != want || d.Status.ObservedGeneration < d.Generation ||
				d.Status.UpdatedReplicas != 1 || d.Status.AvailableReplicas != 1 || d.Status.Replicas != 1 {
				last = fmt.Sprintf("%s on %s: template %s, ConfigMap %s, replicas %d updated %d available %d",
					tg.id, tg.cluster, got, cm.Data["version"], d.Status.Replicas, d.Status.UpdatedReplicas, d.Status.AvailableReplicas)
				return false
			}
		}
		return true
	}, "not every destination runs %s (%s)", tag, &last)
}

// createProject creates Project ns and its Warehouse (Kargo's Project
// webhook creates the namespace).
func createProject(t *testing.T, ns string) {
	t.Helper()
	ctx := ctxT(t)
	require.NoError(t, hub.Create(ctx, &kargo.Project{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	require.Eventually(t, func() bool {
		got := &corev1.Namespace{}
		return hub.Get(ctx, client.ObjectKey{Name: ns}, got) == nil && got.Labels[kargo.ProjectLabel] == "true"
	}, cfg.timeout, 100*time.Millisecond, "Kargo never created the namespace of Project %s", ns)
	require.NoError(t, hub.Create(ctx, &kargo.Warehouse{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: warehouse},
		Spec: &apiextensionsv1.JSON{Raw: fmt.Appendf(nil, `{"freightCreationPolicy": "Manual",
			"subscriptions": [{"git": {"repoURL": %q, "branch": "main"}}]}`, freightRepo)},
	}))
}

// appState is what the watcher saw of an Application at one time.
type appState struct {
	at                   time.Time
	rev, sync, health    string
	targetRevision, opPh string
}

// watcher polls the fleet's Promotions and Applications every tick and
// keeps when it first saw each Promotion and every change of each
// Application's state.
type watcher struct {
	mu        sync.Mutex
	promoSeen map[string]time.Time
	promos    map[string]kargo.Promotion
	// promoFailed is when each Promotion was first seen Errored or Failed;
	// breached when each rollout was first seen with ThresholdBreached.
	promoFailed map[string]time.Time
	breached    map[string]time.Time
	history     map[string][]appState
}

func startWatcher(t *testing.T, f *argoFleet) *watcher {
	w := &watcher{promoSeen: map[string]time.Time{}, promos: map[string]kargo.Promotion{}, promoFailed: map[string]time.Time{},
		breached: map[string]time.Time{}, history: map[string][]appState{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			w.poll(ctx, f)
			select {
			case <-ctx.Done():
			case <-time.After(tick):
			}
		}
	}()
	return w
}

// poll reads the fleet's rollouts, Promotions and Applications once, each
// list bounded so that one slow answer cannot stop the watcher.
func (w *watcher) poll(parent context.Context, f *argoFleet) {
	ctx, cancel := context.WithTimeout(parent, 5*time.Second)
	defer cancel()
	now := time.Now()
	rollouts := &fleetv1alpha1.FleetRolloutList{}
	if err := hub.List(ctx, rollouts, client.InNamespace(f.ns)); err == nil {
		w.mu.Lock()
		for _, ro := range rollouts.Items {
			if _, ok := w.breached[ro.Name]; !ok && meta.IsStatusConditionTrue(ro.Status.Conditions, fleetv1alpha1.ThresholdBreachedCondition) {
				w.breached[ro.Name] = now
			}
		}
		w.mu.Unlock()
	}
	list := &kargo.PromotionList{}
	if err := hub.List(ctx, list, client.InNamespace(f.ns)); err != nil {
		if parent.Err() == nil {
			f.t.Logf("watcher: listing Promotions: %v", err)
		}
	} else {
		w.mu.Lock()
		for _, p := range list.Items {
			if _, ok := w.promoSeen[p.Name]; !ok {
				w.promoSeen[p.Name] = now
			}
			if _, ok := w.promoFailed[p.Name]; !ok && (p.Status.Phase == kargo.PromotionErrored || p.Status.Phase == kargo.PromotionFailed) {
				w.promoFailed[p.Name] = now
			}
			w.promos[p.Name] = p
		}
		w.mu.Unlock()
	}
	apps := &unstructured.UnstructuredList{}
	apps.SetAPIVersion("argoproj.io/v1alpha1")
	apps.SetKind("ApplicationList")
	if err := hub.List(ctx, apps, client.InNamespace("argocd"), client.MatchingLabels{projectLabel: f.ns}); err != nil {
		if parent.Err() == nil {
			f.t.Logf("watcher: listing Applications: %v", err)
		}
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, a := range apps.Items {
		s := appState{at: now}
		s.rev, _, _ = unstructured.NestedString(a.Object, "status", "sync", "revision")
		s.sync, _, _ = unstructured.NestedString(a.Object, "status", "sync", "status")
		s.health, _, _ = unstructured.NestedString(a.Object, "status", "health", "status")
		s.targetRevision, _, _ = unstructured.NestedString(a.Object, "spec", "source", "targetRevision")
		s.opPh, _, _ = unstructured.NestedString(a.Object, "status", "operationState", "phase")
		h := w.history[a.GetName()]
		if n := len(h); n == 0 || h[n-1].rev != s.rev || h[n-1].sync != s.sync || h[n-1].health != s.health ||
			h[n-1].targetRevision != s.targetRevision || h[n-1].opPh != s.opPh {
			w.history[a.GetName()] = append(h, s)
		}
	}
}

// firstFailure returns when the first target Promotion of rollout was seen
// failed.
func (w *watcher) firstFailure(rollout string) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	var first time.Time
	for name, at := range w.promoFailed {
		if w.promos[name].Labels[fleetv1alpha1.RolloutLabel] == rollout && (first.IsZero() || at.Before(first)) {
			first = at
		}
	}
	return first
}

// failedPromotions returns the messages of the rollout's failed target
// Promotions, by target id.
func (w *watcher) failedPromotions(rollout string) map[string]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]string{}
	for name := range w.promoFailed {
		if p := w.promos[name]; p.Labels[fleetv1alpha1.RolloutLabel] == rollout && strings.HasPrefix(p.Spec.Stage, fleetName+".") {
			out[p.Labels[fleetv1alpha1.TargetLabel]] = p.Status.Message
		}
	}
	return out
}

// breachedAt returns when the rollout was first seen breached.
func (w *watcher) breachedAt(rollout string) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	at, ok := w.breached[rollout]
	return at, ok
}

// firstAt returns when app was first seen, after since, in a state matching
// ok.
func (w *watcher) firstAt(app string, since time.Time, ok func(appState) bool) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	h := w.history[app]
	for i, s := range h {
		// A state seen before since that still holds counts from since.
		if i+1 < len(h) && h[i+1].at.Before(since) {
			continue
		}
		if ok(s) {
			return maxTime(s.at, since), true
		}
	}
	return time.Time{}, false
}

// targetPromotions returns the Promotions of the rollout, by target id, with
// when the watcher first saw each.
func (w *watcher) targetPromotions(rollout string) map[string]time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]time.Time{}
	for name, p := range w.promos {
		if p.Labels[fleetv1alpha1.RolloutLabel] == rollout && strings.HasPrefix(p.Spec.Stage, fleetName+".") {
			out[p.Labels[fleetv1alpha1.TargetLabel]] = w.promoSeen[name]
		}
	}
	return out
}

// dump prints the state history of apps.
func (w *watcher) dump(apps []string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var b strings.Builder
	for _, a := range apps {
		for _, s := range w.history[a] {
			fmt.Fprintf(&b, "  %s %s rev=%.8s targetRevision=%.8s sync=%s health=%s operation=%s\n",
				s.at.Format("15:04:05.000"), a, s.rev, s.targetRevision, s.sync, s.health, s.opPh)
		}
	}
	return b.String()
}

func healthyAt(rev string) func(appState) bool {
	return func(s appState) bool { return s.rev == rev && s.sync == "Synced" && s.health == "Healthy" }
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// percentile returns the nearest-rank p-th percentile of ds.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(float64(len(s))*p+0.999999) - 1
	return s[min(max(i, 0), len(s)-1)]
}

func round(d time.Duration) time.Duration { return d.Round(10 * time.Millisecond) }
