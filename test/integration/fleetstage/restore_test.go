//go:build integration

package fleetstage_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

// restoreBound is how long a changed generated Stage may stay changed in
// these tests: generous against the promise (2 s), far below the time one
// slow whole-fleet reconcile takes (slowStageListDelay).
const restoreBound = 10 * time.Second

// changeAndAwaitRestore changes the upstream Stages of a generated Stage's
// spec, as a `kubectl apply` over it would, and returns how long it took
// until the Stage's spec was as before.
func changeAndAwaitRestore(t *testing.T, ns, name string) time.Duration {
	t.Helper()
	ctx := context.Background()
	key := client.ObjectKey{Namespace: ns, Name: name}
	st := &kargo.Stage{}
	require.NoError(t, env.Client.Get(ctx, key, st))
	want := st.Spec.DeepCopy()
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Client.Get(ctx, key, st); err != nil {
			return err
		}
		st.Spec.RequestedFreight[0].Sources.Stages = []string{"somewhere-else"}
		return env.Client.Update(ctx, st)
	}))
	changed := time.Now()
	got := &kargo.Stage{}
	require.Eventually(t, func() bool {
		return env.Client.Get(ctx, key, got) == nil && got.Generation > st.Generation &&
			equality.Semantic.DeepEqual(want, &got.Spec)
	}, restoreBound, 10*time.Millisecond, "the changed spec of Stage %s was not restored", name)
	return time.Since(changed)
}

// TestChangedGeneratedStageIsRestored changes the spec of a target Stage
// and of a wave Stage of a 100-target fleet whose whole-fleet reconciles
// take 15 s from now on (listing its Stages is slowed down, as on a busy API
// server with a large fleet): each is restored within the bound all the
// same, by the per-Stage restore, which neither lists the fleet nor waits
// for its reconcile.
func TestChangedGeneratedStageIsRestored(t *testing.T) {
	ctx := context.Background()
	ns := "restore"
	newProject(t, ns)
	newProdStage(t, ns, "prod")
	fs := testutil.MakeFleetStage(ns, "fleet").FromStage("prod").
		InlineTargets(targets(100, func(int) map[string]string { return nil })...).Waves(threeWaves()...).Obj()
	require.NoError(t, env.Client.Create(ctx, fs))
	waitReady(t, client.ObjectKeyFromObject(fs))
	settle(t)

	slowProjects.Store(ns, true)
	t.Cleanup(func() { slowProjects.Delete(ns) })
	before := writes.Writes()
	for _, name := range []string{"fleet.cluster-050", "fleet-canary"} {
		took := changeAndAwaitRestore(t, ns, name)
		t.Logf("Stage %s of a 100-target fleet restored in %s", name, took.Round(time.Millisecond))
		fmt.Printf("report: restore of Stage %s in a 100-target fleet: %s\n", name, took.Round(time.Millisecond))
	}
	settle(t)
	require.Equal(t, int64(2), writes.Writes()-before, "one patch per restored Stage, nothing else")
}

// TestTemplateChangeWritesEachStageOnce changes the adopted Stage's
// template, which re-renders every target Stage without a new FleetStage
// generation: each target Stage is written once, and the per-Stage restore
// does not write any back to the previous rendering.
func TestTemplateChangeWritesEachStageOnce(t *testing.T) {
	ctx := context.Background()
	ns := "template-change"
	newProject(t, ns)
	prod := newProdStage(t, ns, "prod")
	const n = 30
	fs := testutil.MakeFleetStage(ns, "fleet").FromStage("prod").
		InlineTargets(targets(n, func(int) map[string]string { return nil })...).Waves(threeWaves()...).Obj()
	require.NoError(t, env.Client.Create(ctx, fs))
	waitReady(t, client.ObjectKeyFromObject(fs))
	settle(t)

	before := writes.Writes()
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(prod), prod); err != nil {
			return err
		}
		prod.Spec.PromotionTemplate.Spec.Steps[0].As = "sync-v2"
		return env.Client.Update(ctx, prod)
	}))
	require.Eventually(t, func() bool {
		for _, st := range listGenerated(t, ns, "fleet", fleetv1alpha1.RoleTarget) {
			if st.Spec.PromotionTemplate.Spec.Steps[0].As != "sync-v2" {
				return false
			}
		}
		return true
	}, wait, tick, "every target Stage takes the adopted Stage's new template")
	settle(t)
	for _, st := range listGenerated(t, ns, "fleet", fleetv1alpha1.RoleTarget) {
		require.Equal(t, "sync-v2", st.Spec.PromotionTemplate.Spec.Steps[0].As, "Stage %s was written back", st.Name)
	}
	changed := writes.Writes() - before
	// Plus the adopted Stage's description and the status writes of the
	// FleetStage reconciler and the version refresh.
	require.LessOrEqual(t, changed, int64(n+4), "each target Stage is written once")
}

// TestRelabelledGeneratedStageIsRestored: a Stage editor who changes a
// generated Stage's spec together with its fleet label does not take the
// Stage away from its FleetStage. The Stage is the FleetStage's by its
// recorded name and UID, so it is restored, labels included, and the fleet
// stays Ready.
func TestRelabelledGeneratedStageIsRestored(t *testing.T) {
	ctx := context.Background()
	ns := "restore-relabelled"
	newProject(t, ns)
	newProdStage(t, ns, "prod")
	fs := testutil.MakeFleetStage(ns, "fleet").FromStage("prod").
		InlineTargets(targets(5, func(int) map[string]string { return nil })...).Waves(threeWaves()...).Obj()
	require.NoError(t, env.Client.Create(ctx, fs))
	waitReady(t, client.ObjectKeyFromObject(fs))
	settle(t)

	key := client.ObjectKey{Namespace: ns, Name: "fleet.cluster-002"}
	st := &kargo.Stage{}
	require.NoError(t, env.Client.Get(ctx, key, st))
	want := st.Spec.DeepCopy()
	for _, label := range []string{"someone-else", ""} {
		require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := env.Client.Get(ctx, key, st); err != nil {
				return err
			}
			st.Spec.RequestedFreight[0].Sources.Stages = []string{"somewhere-else"}
			if label == "" {
				delete(st.Labels, fleetv1alpha1.FleetStageLabel)
			} else {
				st.Labels[fleetv1alpha1.FleetStageLabel] = label
			}
			return env.Client.Update(ctx, st)
		}))
		got := &kargo.Stage{}
		require.Eventually(t, func() bool {
			return env.Client.Get(ctx, key, got) == nil && got.Labels[fleetv1alpha1.FleetStageLabel] == "fleet" &&
				equality.Semantic.DeepEqual(want, &got.Spec)
		}, restoreBound, 10*time.Millisecond, "the relabelled Stage was not restored (label %q)", label)
		require.Equal(t, st.UID, got.UID, "restored in place, not re-created")
		settle(t)
		cur := &fleetv1alpha1.FleetStage{}
		require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(fs), cur))
		for _, c := range cur.Status.Conditions {
			if c.Type == fleetv1alpha1.StagesSyncedCondition || c.Type == fleetv1alpha1.ReadyCondition {
				require.Equal(t, "True", string(c.Status), "%s: %s", c.Type, c.Message)
			}
		}
	}
}
