//go:build e2e

package e2e_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/render"
	"github.com/kargo-fleet/kargo-fleet/test/e2e/targetserver"
)

const (
	fleetName = "fleet"
	warehouse = "apps"
	tick      = 250 * time.Millisecond
)

// perTargetSteps is the per-target promotion template: one http step to the
// target server, naming the target and the Freight.
const perTargetSteps = `[{"uses": "http", "as": "deploy", "config": {
	"method": "GET", "url": "${{ vars.targetURL }}/promote", "timeout": "120s",
	"queryParams": [
		{"name": "target", "value": "${{ vars.fleetTargetId }}"},
		{"name": "freight", "value": "${{ ctx.targetFreight.name }}"}],
	"successExpression": "response.status == 200 && response.body.state == 'done'",
	"failureExpression": "response.status != 200 || response.body.state == 'failed'"}}]`

// fleet is one fresh Kargo Project with a Stage "prod" adopted by the
// FleetStage "fleet" over inline targets.
type fleet struct {
	t  *testing.T
	ns string
	// freight maps the suite's Freight labels ("good", "bad") to the names
	// Kargo gave them.
	freight map[string]string
}

type fleetSpec struct {
	targets []fleetv1alpha1.InlineTarget
	waves   []fleetv1alpha1.Wave
	policy  fleetv1alpha1.FleetPolicy
	// downstream adds a Stage "after-prod" taking Freight from prod.
	downstream bool
	// shards, when set, puts the fleet's Stages on Kargo shards.
	shards *fleetv1alpha1.ShardsSpec
	// analysis is the FleetStage's wave analysis.
	analysis *fleetv1alpha1.FleetAnalysis
}

// newFleet creates a Project named <prefix>-<random> and waits until its
// FleetStage is Ready.
func newFleet(t *testing.T, prefix string, spec fleetSpec) *fleet {
	t.Helper()
	ctx := ctxT(t)
	suffix := make([]byte, 3)
	_, _ = rand.Read(suffix)
	f := &fleet{t: t, ns: "e2e-" + prefix + "-" + hex.EncodeToString(suffix), freight: map[string]string{}}
	report(t, "project=%s", f.ns)
	createProject(t, f.ns)
	var steps []kargo.PromotionStep
	require.NoError(t, json.Unmarshal([]byte(perTargetSteps), &steps))
	origin := kargo.FreightOrigin{Kind: kargo.OriginKindWarehouse, Name: warehouse}
	require.NoError(t, kube.Create(ctx, &kargo.Stage{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "prod"},
		Spec: kargo.StageSpec{
			Vars:              []kargo.ExpressionVariable{{Name: "targetURL", Value: cfg.targetURL}},
			RequestedFreight:  []kargo.FreightRequest{{Origin: origin, Sources: kargo.FreightSources{Direct: true}}},
			PromotionTemplate: &kargo.PromotionTemplate{Spec: kargo.PromotionTemplateSpec{Steps: steps}},
		},
	}))
	if spec.downstream {
		require.NoError(t, kube.Create(ctx, downstreamStage(f.ns)))
	}
	require.NoError(t, kube.Create(ctx, &fleetv1alpha1.FleetStage{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: fleetName},
		Spec: fleetv1alpha1.FleetStageSpec{
			Stage: fleetv1alpha1.StageSource{FromStage: "prod"},
			Targets: fleetv1alpha1.TargetsSpec{Sources: []fleetv1alpha1.TargetSource{{
				Kind: fleetv1alpha1.InlineSource, Inline: spec.targets,
			}}},
			Waves:    spec.waves,
			Policy:   spec.policy,
			Shards:   spec.shards,
			Analysis: spec.analysis,
		},
	}))
	start := time.Now()
	f.eventually(func() bool {
		fs := f.fleetStage()
		return fs != nil && meta.IsStatusConditionTrue(fs.Status.Conditions, fleetv1alpha1.ReadyCondition)
	}, "the FleetStage never became Ready")
	report(t, "fleetstage_ready=%s targets=%d", time.Since(start).Round(100*time.Millisecond), len(spec.targets))
	return f
}

func downstreamStage(ns string) *kargo.Stage {
	return &kargo.Stage{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "after-prod"},
		Spec: kargo.StageSpec{
			RequestedFreight: []kargo.FreightRequest{{
				Origin:  kargo.FreightOrigin{Kind: kargo.OriginKindWarehouse, Name: warehouse},
				Sources: kargo.FreightSources{Stages: []string{"prod"}},
			}},
			PromotionTemplate: &kargo.PromotionTemplate{Spec: kargo.PromotionTemplateSpec{Steps: []kargo.PromotionStep{{
				Uses: "http", As: "notify", Config: &apiextensionsv1.JSON{Raw: []byte(`{"method": "GET",
					"url": "` + "${{ vars.targetURL }}" + `/healthz", "successExpression": "response.status == 200"}`)},
			}}}},
			Vars: []kargo.ExpressionVariable{{Name: "targetURL", Value: cfg.targetURL}},
		},
	}
}

// inline returns n targets named <prefix>-NN with the given labels.
func inline(prefix string, n int, labels map[string]string) []fleetv1alpha1.InlineTarget {
	out := make([]fleetv1alpha1.InlineTarget, n)
	for i := range out {
		out[i] = fleetv1alpha1.InlineTarget{Name: fmt.Sprintf("%s-%02d", prefix, i), Labels: labels}
	}
	return out
}

func (f *fleet) eventually(cond func() bool, msg string, args ...any) {
	f.t.Helper()
	require.Eventually(f.t, cond, cfg.timeout, tick, append([]any{msg}, args...)...)
}

func (f *fleet) fleetStage() *fleetv1alpha1.FleetStage {
	fs := &fleetv1alpha1.FleetStage{}
	if err := kube.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: fleetName}, fs); err != nil {
		return nil
	}
	return fs
}

// newFreight creates a Freight of the Warehouse, as a Warehouse or
// `kargo` would, and remembers the name Kargo gave it (Kargo names Freight
// by a hash of its contents). The image tag names the Project, so Freight
// of different scenarios never share a name and the target server's log
// tells them apart.
func (f *fleet) newFreight(label string) string {
	f.t.Helper()
	fr := &kargo.Freight{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: f.ns + "-" + label},
		Alias:      label,
		Origin:     kargo.FreightOrigin{Kind: kargo.OriginKindWarehouse, Name: warehouse},
		Images: []apiextensionsv1.JSON{{Raw: fmt.Appendf(nil,
			`{"repoURL":"registry.invalid/e2e/guestbook","tag":%q}`, f.ns+"-"+label)}},
	}
	require.NoError(f.t, kube.Create(context.Background(), fr))
	f.freight[label] = fr.Name
	return fr.Name
}

// promote promotes freight into the wave Stage of wave, as `kargo promote`
// does, and returns when the Promotion exists.
func (f *fleet) promote(freight, wave string) {
	f.t.Helper()
	f.promoteStage(freight, render.WaveStageName(fleetName, wave))
}

// promoteStage promotes freight into stage, retrying while Kargo says it is
// not available there yet (Kargo marks Freight verified shortly after the
// upstream Promotion succeeded).
func (f *fleet) promoteStage(freight, stage string) {
	f.t.Helper()
	p := kargo.NewPromotion(f.ns, stage, freight, nil, nil)
	f.eventually(func() bool {
		err := kube.Create(context.Background(), p)
		if err != nil {
			f.t.Logf("promoting %s into %s: %v", freight, p.Spec.Stage, err)
		}
		return err == nil
	}, "the Promotion of %s into %s was never accepted", freight, stage)
}

// rollouts lists the FleetRollouts of the fleet.
func (f *fleet) rollouts() []fleetv1alpha1.FleetRollout {
	list := &fleetv1alpha1.FleetRolloutList{}
	require.NoError(f.t, kube.List(context.Background(), list, client.InNamespace(f.ns)))
	return list.Items
}

func (f *fleet) find(freight string, dir fleetv1alpha1.RolloutDirection) *fleetv1alpha1.FleetRollout {
	for _, ro := range f.rollouts() {
		if ro.Spec.Freight.Name == freight && ro.Spec.Direction == dir {
			return &ro
		}
	}
	return nil
}

// await waits for the rollout of freight in direction dir to reach one of
// phases.
func (f *fleet) await(freight string, dir fleetv1alpha1.RolloutDirection, phases ...fleetv1alpha1.RolloutPhase) *fleetv1alpha1.FleetRollout {
	f.t.Helper()
	var ro *fleetv1alpha1.FleetRollout
	for end := time.Now().Add(cfg.timeout); time.Now().Before(end); time.Sleep(tick) {
		if ro = f.find(freight, dir); ro != nil && slices.Contains(phases, ro.Status.Phase) {
			return ro
		}
	}
	require.FailNow(f.t, fmt.Sprintf("no %s rollout of %s reached %v (last: %s)", dir, freight, phases, describe(ro)))
	return nil
}

func describe(ro *fleetv1alpha1.FleetRollout) string {
	if ro == nil {
		return "none"
	}
	return fmt.Sprintf("%s: %s", ro.Status.Phase, ro.Status.Message)
}

// targetFreight maps each target id to the Freight its Stage runs.
func (f *fleet) targetFreight() map[string]string {
	f.t.Helper()
	list := &kargo.StageList{}
	require.NoError(f.t, kube.List(context.Background(), list, client.InNamespace(f.ns),
		client.MatchingLabels{fleetv1alpha1.RoleLabel: fleetv1alpha1.RoleTarget}))
	out := map[string]string{}
	for _, st := range list.Items {
		names := st.CurrentFreightNames()
		out[st.Labels[fleetv1alpha1.TargetLabel]] = ""
		if len(names) > 0 {
			out[st.Labels[fleetv1alpha1.TargetLabel]] = names[0]
		}
	}
	return out
}

// requireAllOn fails unless every target Stage runs freight.
func (f *fleet) requireAllOn(freight string) {
	f.t.Helper()
	var last map[string]string
	f.eventually(func() bool {
		last = f.targetFreight()
		for _, got := range last {
			if got != freight {
				return false
			}
		}
		return len(last) > 0
	}, "not every target runs %s: %v", freight, last)
}

// targetPromotions lists the Promotions of target Stages, by rollout.
func (f *fleet) targetPromotions() []kargo.Promotion {
	f.t.Helper()
	list := &kargo.PromotionList{}
	require.NoError(f.t, kube.List(context.Background(), list, client.InNamespace(f.ns)))
	var out []kargo.Promotion
	for _, p := range list.Items {
		if strings.HasPrefix(p.Spec.Stage, fleetName+".") {
			out = append(out, p)
		}
	}
	return out
}

// requireOncePerTarget fails when a (rollout, target) pair has more than one
// Promotion; it returns how many pairs it saw.
func (f *fleet) requireOncePerTarget() int {
	f.t.Helper()
	seen := map[string]string{}
	for _, p := range f.targetPromotions() {
		ro := p.Labels[fleetv1alpha1.RolloutLabel]
		if ro == "" {
			continue
		}
		key := ro + "/" + p.Labels[fleetv1alpha1.TargetLabel]
		require.Empty(f.t, seen[key], "target promoted twice by one rollout: %s (%s and %s)", key, seen[key], p.Name)
		seen[key] = p.Name
	}
	return len(seen)
}

// callsFor counts the target server's calls for freight, by target.
func callsFor(t *testing.T, freight string) map[string]int {
	t.Helper()
	calls, err := targets.Calls(context.Background())
	require.NoError(t, err)
	out := map[string]int{}
	for _, c := range calls {
		if c.Freight == freight {
			out[c.Target]++
		}
	}
	return out
}

// setRules replaces the target server's rules.
func setRules(t *testing.T, rules ...targetserver.Rule) {
	t.Helper()
	require.NoError(t, targets.SetRules(context.Background(), rules))
}

// event returns the first Event of reason in the fleet's Project whose note
// contains text, waiting for it.
func (f *fleet) event(reason, text string) eventsv1.Event {
	f.t.Helper()
	var found eventsv1.Event
	f.eventually(func() bool {
		list := &eventsv1.EventList{}
		require.NoError(f.t, kube.List(context.Background(), list, client.InNamespace(f.ns)))
		for _, e := range list.Items {
			if e.Reason == reason && strings.Contains(e.Note, text) {
				found = e
				return true
			}
		}
		return false
	}, "no %s Event saying %q", reason, text)
	return found
}

// callWindows returns, by wave, when the target server was first and last
// called for freight.
func (f *fleet) callWindows(freight string) (first, last map[string]time.Time) {
	f.t.Helper()
	list := &kargo.StageList{}
	require.NoError(f.t, kube.List(context.Background(), list, client.InNamespace(f.ns),
		client.MatchingLabels{fleetv1alpha1.RoleLabel: fleetv1alpha1.RoleTarget}))
	waveOf := map[string]string{}
	for _, st := range list.Items {
		waveOf[st.Labels[fleetv1alpha1.TargetLabel]] = st.Labels[fleetv1alpha1.WaveLabel]
	}
	calls, err := targets.Calls(context.Background())
	require.NoError(f.t, err)
	first, last = map[string]time.Time{}, map[string]time.Time{}
	for _, c := range calls {
		w, ok := waveOf[c.Target]
		if c.Freight != freight || !ok {
			continue
		}
		if t, seen := first[w]; !seen || c.Time.Before(t) {
			first[w] = c.Time
		}
		if c.Time.After(last[w]) {
			last[w] = c.Time
		}
	}
	return first, last
}

// createProject creates Project ns with the suite's Warehouse. It creates
// the Project only: Kargo's Project webhook creates the namespace,
// labelled. Creating the namespace first races the webhook's informer
// cache: it may not see the namespace yet, try to create it and answer
// AlreadyExists as an internal error.
func createProject(t *testing.T, ns string) {
	t.Helper()
	ctx := ctxT(t)
	require.NoError(t, kube.Create(ctx, &kargo.Project{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	require.Eventually(t, func() bool {
		got := &corev1.Namespace{}
		return kube.Get(ctx, client.ObjectKey{Name: ns}, got) == nil && got.Labels[kargo.ProjectLabel] == "true"
	}, cfg.timeout, 100*time.Millisecond, "Kargo never created the namespace of Project %s", ns)
	require.NoError(t, kube.Create(ctx, &kargo.Warehouse{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: warehouse},
		Spec: &apiextensionsv1.JSON{Raw: []byte(`{"freightCreationPolicy": "Manual",
			"subscriptions": [{"image": {"repoURL": "registry.invalid/e2e/guestbook"}}]}`)},
	}))
}
