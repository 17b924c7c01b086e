//go:build integration

package fleetstage_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/fleetstage/controller/fleetstages"
	"github.com/kargo-fleet/kargo-fleet/internal/envtest"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/render"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

const (
	wait = 30 * time.Second
	tick = 50 * time.Millisecond
)

func newProject(t *testing.T, name string) {
	t.Helper()
	testutil.Create(t, env.Client, envtest.ProjectNamespace(name))
}

// newProdStage creates the Stage a FleetStage adopts: it takes Freight from
// "staging" after an hour of soak and promotes with an argocd-update step.
func newProdStage(t *testing.T, ns, name string) *kargo.Stage {
	t.Helper()
	st := testutil.MakeStage(ns, name).Upstream("staging").Soak(time.Hour).
		Vars("appName", "guestbook", "region", "from-template").
		Steps(kargo.PromotionStep{Uses: "argocd-update", As: "sync"}).Obj()
	testutil.Create(t, env.Client, st)
	return st
}

func targets(n int, labels func(i int) map[string]string) []fleetv1alpha1.InlineTarget {
	out := make([]fleetv1alpha1.InlineTarget, n)
	for i := range out {
		out[i] = fleetv1alpha1.InlineTarget{
			Name:   fmt.Sprintf("cluster-%03d", i),
			Labels: labels(i),
			Params: map[string]string{"server": fmt.Sprintf("https://c%03d.example", i), "region": "eu"},
		}
	}
	return out
}

func threeWaves() []fleetv1alpha1.Wave {
	return []fleetv1alpha1.Wave{
		{Name: "pilot", Count: testutil.Int(1)},
		{Name: "canary", Count: testutil.Int(2), Soak: &metav1.Duration{Duration: 10 * time.Minute}},
		{Name: "general"},
	}
}

func listGenerated(t *testing.T, ns, fs string, role string) []kargo.Stage {
	t.Helper()
	list := &kargo.StageList{}
	require.NoError(t, env.Client.List(context.Background(), list, client.InNamespace(ns),
		client.MatchingLabels{fleetv1alpha1.FleetStageLabel: fs, fleetv1alpha1.RoleLabel: role}))
	return list.Items
}

func waitReady(t *testing.T, key client.ObjectKey) *fleetv1alpha1.FleetStage {
	t.Helper()
	return testutil.AwaitReady(t, env.Client, testutil.Named[fleetv1alpha1.FleetStage](key.Namespace, key.Name), wait)
}

func TestExpansionOfAdoptedStage(t *testing.T) {
	ctx := context.Background()
	ns := "expand"
	newProject(t, ns)
	newProdStage(t, ns, "prod")
	fs := testutil.MakeFleetStage(ns, "prod").FromStage("prod").
		InlineTargets(targets(10, func(int) map[string]string { return map[string]string{"tier": "web"} })...).
		Waves(threeWaves()...).Obj()
	require.NoError(t, env.Client.Create(ctx, fs))
	got := waitReady(t, client.ObjectKeyFromObject(fs))

	require.EqualValues(t, 10, got.Status.Targets.Selected)
	require.EqualValues(t, 3, got.Status.WaveCount)
	waves := map[string]kargo.Stage{}
	for _, w := range listGenerated(t, ns, "prod", fleetv1alpha1.RoleWave) {
		waves[w.Name] = w
	}
	require.Len(t, waves, 3)
	require.Eventually(t, func() bool {
		got = &fleetv1alpha1.FleetStage{}
		return env.Client.Get(ctx, client.ObjectKeyFromObject(fs), got) == nil && len(got.Status.Waves) == 3 &&
			got.Status.Waves[2].StageUID != ""
	}, 30*time.Second, 100*time.Millisecond)
	uid := func(stage string) string { w := waves[stage]; return string(w.UID) }
	require.Equal(t, []fleetv1alpha1.WaveMembership{
		{Name: "pilot", Stage: "prod-pilot", Members: 1, StageUID: uid("prod-pilot")},
		{Name: "canary", Stage: "prod-canary", Members: 2, StageUID: uid("prod-canary")},
		{Name: "general", Stage: "prod-general", Members: 7, StageUID: uid("prod-general")},
	}, got.Status.Waves, "status records each wave Stage's UID")
	require.NotEmpty(t, got.Status.StageRecord)
	pilot, canary, general := waves["prod-pilot"], waves["prod-canary"], waves["prod-general"]
	require.Equal(t, []string{"staging"}, pilot.Spec.RequestedFreight[0].Sources.Stages, "the first wave takes the adopted Stage's sources")
	require.Equal(t, time.Hour, pilot.Spec.RequestedFreight[0].Sources.RequiredSoakTime.Duration)
	require.Equal(t, []string{"prod-pilot"}, canary.Spec.RequestedFreight[0].Sources.Stages)
	require.Nil(t, canary.Spec.RequestedFreight[0].Sources.RequiredSoakTime, "pilot has no soak")
	require.Equal(t, []string{"prod-canary"}, general.Spec.RequestedFreight[0].Sources.Stages)
	require.Equal(t, 10*time.Minute, general.Spec.RequestedFreight[0].Sources.RequiredSoakTime.Duration, "canary's soak gates general")
	step := canary.Spec.PromotionTemplate.Spec.Steps[0]
	require.Equal(t, render.WaveTaskName, step.Task.Name)
	require.Equal(t, kargo.ClusterPromotionTaskKind, step.Task.Kind)
	require.True(t, metav1.IsControlledBy(&canary, got))

	targetStages := listGenerated(t, ns, "prod", fleetv1alpha1.RoleTarget)
	require.Len(t, targetStages, 10)
	perWave := map[string]int{}
	for _, st := range targetStages {
		wave := st.Labels[fleetv1alpha1.WaveLabel]
		perWave[wave]++
		require.Equal(t, render.TargetStageName("prod", st.Labels[fleetv1alpha1.TargetLabel]), st.Name)
		require.True(t, metav1.IsControlledBy(&st, got))
		require.Equal(t, waves["prod-"+wave].Spec.RequestedFreight, st.Spec.RequestedFreight,
			"a target Stage takes Freight from where its wave Stage does")
		require.Equal(t, "argocd-update", st.Spec.PromotionTemplate.Spec.Steps[0].Uses, "the per-target template is the adopted one")
		vars := map[string]string{}
		for _, v := range st.Spec.Vars {
			vars[v.Name] = v.Value
		}
		name := st.Annotations[fleetv1alpha1.TargetNameAnnotation]
		require.Equal(t, name, vars[render.VarTarget])
		require.Equal(t, "https://c"+name[len("cluster-"):]+".example", vars["server"])
		require.Equal(t, "guestbook", vars["appName"])
		require.Equal(t, "from-template", vars["region"], "the adopted Stage's vars win over target params")
		require.Equal(t, wave, vars[render.VarWave])
	}
	require.Equal(t, map[string]int{"pilot": 1, "canary": 2, "general": 7}, perWave)
	require.Equal(t, []fleetv1alpha1.FreightCount{{Freight: "none", Targets: 10}}, waitVersions(t, client.ObjectKeyFromObject(fs)))
}

func waitVersions(t *testing.T, key client.ObjectKey) []fleetv1alpha1.FreightCount {
	t.Helper()
	fs := testutil.Await(t, env.Client, testutil.Named[fleetv1alpha1.FleetStage](key.Namespace, key.Name), wait,
		func(fs *fleetv1alpha1.FleetStage) bool {
			n := int32(0)
			for _, v := range fs.Status.Versions {
				n += v.Targets
			}
			return n == fs.Status.Targets.Selected-fs.Status.Targets.Unassigned
		}, "the versions of FleetStage %s never counted every target", key)
	return fs.Status.Versions
}

func TestUnchangedFleetStageMakesNoWrites(t *testing.T) {
	ctx := context.Background()
	ns := "nowrites"
	newProject(t, ns)
	newProdStage(t, ns, "prod")
	fs := testutil.MakeFleetStage(ns, "fleet").FromStage("prod").
		InlineTargets(targets(20, func(int) map[string]string { return nil })...).Waves(threeWaves()...).Obj()
	require.NoError(t, env.Client.Create(ctx, fs))
	waitReady(t, client.ObjectKeyFromObject(fs))
	settle(t)

	before := writes.Writes()
	// An annotation change triggers a reconcile without changing the spec.
	patch := client.MergeFrom(fs.DeepCopy())
	metav1.SetMetaDataAnnotation(&fs.ObjectMeta, "example.com/poke", "1")
	require.NoError(t, env.Client.Patch(ctx, fs, patch))
	settle(t)
	require.Equal(t, before, writes.Writes(), "a reconcile of an unchanged FleetStage must not write")

	// A spec change that re-renders every target Stage writes each once.
	updateFleet(t, fs, func(fs *fleetv1alpha1.FleetStage) {
		fs.Spec.Waves[1].Soak = &metav1.Duration{Duration: 20 * time.Minute}
	})
	waitReady(t, client.ObjectKeyFromObject(fs))
	settle(t)
	generalTargets := 20 - 3
	changed := writes.Writes() - before
	require.GreaterOrEqual(t, changed, int64(1+generalTargets), "the general wave Stage and its targets change")
	// Plus status: the FleetStage reconciler's write, the version refresh's
	// (its Drifted condition follows the generation), and at most one of
	// its locked writes refused as stale and sent again.
	require.LessOrEqual(t, changed, int64(1+generalTargets+3), "only the affected Stages (plus status) are written")
}

// settle waits until the controllers have stopped writing for three
// seconds: longer than the version refresh's pacing of its status writes
// (at least two seconds apart), so a paced write is not taken for a write
// of the next step.
func settle(t *testing.T) {
	t.Helper()
	last, quiet := writes.Writes(), 0
	for quiet < 30 {
		time.Sleep(100 * time.Millisecond)
		if n := writes.Writes(); n != last {
			last, quiet = n, 0
			continue
		}
		quiet++
	}
}

func TestTargetsJoinLeaveAndMove(t *testing.T) {
	ctx := context.Background()
	ns := "membership"
	newProject(t, ns)
	newProdStage(t, ns, "prod")
	critical := func(i int) map[string]string {
		if i == 0 {
			return map[string]string{"tier": "critical"}
		}
		return map[string]string{"tier": "web"}
	}
	waves := []fleetv1alpha1.Wave{
		{Name: "web", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "web"}}},
		{Name: "critical", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "critical"}}},
	}
	fs := testutil.MakeFleetStage(ns, "fleet").FromStage("prod").InlineTargets(targets(5, critical)...).Waves(waves...).Obj()
	require.NoError(t, env.Client.Create(ctx, fs))
	waitReady(t, client.ObjectKeyFromObject(fs))
	require.Len(t, listGenerated(t, ns, "fleet", fleetv1alpha1.RoleTarget), 5)

	// Join: cluster-005 appears; leave: cluster-004 goes; move: cluster-003 becomes critical.
	ts := targets(6, critical)
	ts[3].Labels = map[string]string{"tier": "critical"}
	updateFleet(t, fs, func(fs *fleetv1alpha1.FleetStage) {
		fs.Spec.Targets.Sources[0].Inline = append(slices.Clip(ts[:4]), ts[5])
	})
	waitReady(t, client.ObjectKeyFromObject(fs))

	require.Eventually(t, func() bool {
		byTarget := map[string]string{}
		for _, st := range listGenerated(t, ns, "fleet", fleetv1alpha1.RoleTarget) {
			byTarget[st.Labels[fleetv1alpha1.TargetLabel]] = st.Labels[fleetv1alpha1.WaveLabel]
		}
		return len(byTarget) == 5 && byTarget["cluster-005"] == "web" && byTarget["cluster-004"] == "" &&
			byTarget["cluster-003"] == "critical" && byTarget["cluster-000"] == "critical"
	}, wait, tick)
	st := &kargo.Stage{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "fleet.cluster-003"}, st))
	require.Equal(t, []string{"fleet-web"}, st.Spec.RequestedFreight[0].Sources.Stages,
		"a target moved to the critical wave takes Freight after the web wave")
	requireEvent(t, ns, fleetstages.TargetsJoinedReason, "cluster-005")
	requireEvent(t, ns, fleetstages.TargetsLeftReason, "cluster-004")
	requireEvent(t, ns, fleetstages.TargetsMovedReason, "cluster-003")
}

func requireEvent(t *testing.T, ns, reason, contains string) {
	t.Helper()
	require.Eventually(t, func() bool {
		list := &eventsv1.EventList{}
		if err := env.Client.List(context.Background(), list, client.InNamespace(ns)); err != nil {
			return false
		}
		for _, e := range list.Items {
			if e.Reason == reason && strings.Contains(e.Note, contains) {
				return true
			}
		}
		return false
	}, wait, tick, "no %s Event mentioning %s", reason, contains)
}

func TestPruningWaitsForInFlightPromotion(t *testing.T) {
	ctx := context.Background()
	ns := "prune"
	newProject(t, ns)
	newProdStage(t, ns, "prod")
	fs := testutil.MakeFleetStage(ns, "fleet").FromStage("prod").
		InlineTargets(targets(3, func(int) map[string]string { return nil })...).Obj()
	require.NoError(t, env.Client.Create(ctx, fs))
	waitReady(t, client.ObjectKeyFromObject(fs))

	// A Promotion of cluster-002 is running.
	// Kargo's webhook copies the Stage's steps; this suite runs without it.
	promo := testutil.MakePromotion(ns, "fleet.cluster-002", "f1").Steps(kargo.PromotionStep{Uses: "argocd-update"}).Obj()
	testutil.Create(t, env.Client, promo)
	promo.Status.Phase = kargo.PromotionRunning
	require.NoError(t, env.Client.Status().Update(ctx, promo))

	updateFleet(t, fs, func(fs *fleetv1alpha1.FleetStage) {
		fs.Spec.Targets.Sources[0].Inline = fs.Spec.Targets.Sources[0].Inline[:2]
	})

	key := client.ObjectKey{Namespace: ns, Name: "fleet.cluster-002"}
	require.Eventually(t, func() bool {
		st := &kargo.Stage{}
		return env.Client.Get(ctx, key, st) == nil && st.Annotations[fleetv1alpha1.PruneAnnotation] == "true"
	}, wait, tick, "the Stage is marked, not deleted, while its Promotion runs")
	require.Eventually(t, func() bool {
		got := &fleetv1alpha1.FleetStage{}
		require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(fs), got))
		c := meta.FindStatusCondition(got.Status.Conditions, fleetv1alpha1.StagesSyncedCondition)
		return c != nil && c.Reason == fleetv1alpha1.PruningReason
	}, wait, tick)
	time.Sleep(500 * time.Millisecond)
	require.NoError(t, env.Client.Get(ctx, key, &kargo.Stage{}), "still there while the Promotion runs")

	promo.Status.Phase = kargo.PromotionSucceeded
	require.NoError(t, env.Client.Status().Update(ctx, promo))
	require.Eventually(t, func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, key, &kargo.Stage{}))
	}, wait, tick, "the Stage goes once its Promotion finished")
	waitReady(t, client.ObjectKeyFromObject(fs))
}

func TestAdoptionRepointsDownstreamStages(t *testing.T) {
	ctx := context.Background()
	ns := "adopt"
	newProject(t, ns)
	newProdStage(t, ns, "prod")
	dr := testutil.MakeStage(ns, "prod-dr").Upstream("prod").Steps(kargo.PromotionStep{Uses: "argocd-update"}).Obj()
	testutil.Create(t, env.Client, dr)
	fs := testutil.MakeFleetStage(ns, "fleet").FromStage("prod").
		InlineTargets(targets(4, func(int) map[string]string { return nil })...).Waves(threeWaves()...).Obj()
	require.NoError(t, env.Client.Create(ctx, fs))
	waitReady(t, client.ObjectKeyFromObject(fs))

	require.Eventually(t, func() bool {
		require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(dr), dr))
		return dr.Spec.RequestedFreight[0].Sources.Stages[0] == "fleet-general"
	}, wait, tick, "a Stage downstream of the adopted Stage takes Freight once the last wave verified it")
	require.Equal(t, "fleet/prod", dr.Annotations[fleetv1alpha1.RepointedAnnotation])
	prod := &kargo.Stage{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "prod"}, prod))
	require.Equal(t, []string{"staging"}, prod.Spec.RequestedFreight[0].Sources.Stages, "the adopted Stage itself is left as it is")
	require.Eventually(t, func() bool {
		require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "prod"}, prod))
		return strings.Contains(prod.Annotations[kargo.DescriptionAnnotation], "Template of FleetStage fleet (kargo-fleet)")
	}, wait, tick, "the Kargo UI says why the adopted Stage has no Freight")

	// A GitOps tool re-applies the downstream Stage as written: it takes
	// Freight from the adopted Stage again, and is re-pointed at once.
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(dr), dr))
		dr.Spec.RequestedFreight[0].Sources.Stages = []string{"prod"}
		return env.Client.Update(ctx, dr)
	}))
	require.Eventually(t, func() bool {
		require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(dr), dr))
		return dr.Spec.RequestedFreight[0].Sources.Stages[0] == "fleet-general"
	}, 5*time.Second, tick, "a re-applied downstream Stage is re-pointed again")
	// A downstream Stage created after the adoption is re-pointed too.
	late := dr.DeepCopy()
	late.ObjectMeta = metav1.ObjectMeta{Namespace: ns, Name: "prod-late"}
	late.Spec.RequestedFreight[0].Sources.Stages = []string{"prod"}
	require.NoError(t, env.Client.Create(ctx, late))
	require.Eventually(t, func() bool {
		require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(late), late))
		return late.Spec.RequestedFreight[0].Sources.Stages[0] == "fleet-general"
	}, 5*time.Second, tick, "a downstream Stage created later is re-pointed")

	require.NoError(t, env.Client.Delete(ctx, fs))
	require.Eventually(t, func() bool {
		require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(dr), dr))
		return dr.Spec.RequestedFreight[0].Sources.Stages[0] == "prod" && dr.Annotations[fleetv1alpha1.RepointedAnnotation] == ""
	}, wait, tick, "deleting the FleetStage restores the downstream Stage")
}

func TestMissingAdoptedStageIsReported(t *testing.T) {
	ctx := context.Background()
	ns := "missing"
	newProject(t, ns)
	fs := testutil.MakeFleetStage(ns, "fleet").FromStage("nope").Obj()
	require.NoError(t, env.Client.Create(ctx, fs))
	require.Eventually(t, func() bool {
		got := &fleetv1alpha1.FleetStage{}
		require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(fs), got))
		c := meta.FindStatusCondition(got.Status.Conditions, fleetv1alpha1.ReadyCondition)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == fleetv1alpha1.StageSourceNotFoundReason
	}, wait, tick)
	// Creating the Stage later lets the FleetStage proceed (the Stage is watched).
	newProdStage(t, ns, "nope")
	waitReady(t, client.ObjectKeyFromObject(fs))
}

// updateFleet changes fs's spec with mutate, read afresh and retried when a
// status write of the controller came first.
func updateFleet(t *testing.T, fs *fleetv1alpha1.FleetStage, mutate func(*fleetv1alpha1.FleetStage)) {
	t.Helper()
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(fs), fs); err != nil {
			return err
		}
		mutate(fs)
		return env.Client.Update(context.Background(), fs)
	}))
}
