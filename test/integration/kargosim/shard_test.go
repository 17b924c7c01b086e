//go:build integration

package kargosim_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

// onShard puts a Stage on a shard as Kargo's defaulting webhook leaves it:
// spec.shard and the label.
func onShard(shard string) func(*kargo.Stage) {
	return func(s *kargo.Stage) {
		s.Spec.Shard = shard
		s.Labels = map[string]string{kargo.ShardLabel: shard}
	}
}

// Each shard's controller runs the Promotions of its Stages; Stages without
// a shard go to the default controller; a shard without a controller is
// left alone: its Promotion stays Pending and its Stage gets no status.
func TestShardsAreReconciledByTheirController(t *testing.T) {
	ns := newProject(t)
	newFreight(t, ns, "f1")
	newStage(t, stage(ns, "default-stage"))
	newStage(t, stage(ns, "eu-stage"), onShard(testShard))
	newStage(t, stage(ns, "us-stage"), onShard("us"))

	onDefault := mustPromote(t, ns, "default-stage", "f1")
	onEU := mustPromote(t, ns, "eu-stage", "f1")
	onUS := mustPromote(t, ns, "us-stage", "f1")
	require.Equal(t, testShard, onEU.Labels[kargo.ShardLabel], "the Promotion webhook copies the Stage's shard")
	require.Equal(t, "us", onUS.Labels[kargo.ShardLabel])
	require.NotContains(t, onDefault.Labels, kargo.ShardLabel)

	testutil.Await(t, k8s, onDefault, 15*time.Second, testutil.PromotionPhaseIs(kargo.PromotionSucceeded))
	testutil.Await(t, k8s, onEU, 15*time.Second, testutil.PromotionPhaseIs(kargo.PromotionSucceeded))
	testutil.Await(t, k8s, testutil.Named[kargo.Stage](ns, "eu-stage"), 10*time.Second, func(s *kargo.Stage) bool { return currentFreight(s) == "f1" })

	// Time for the default and eu controllers to have acted on "us" had
	// they wrongly taken it: both finished a whole Promotion meanwhile.
	time.Sleep(2 * time.Second)
	us := &kargo.Promotion{}
	require.NoError(t, k8s.Get(context.Background(), client.ObjectKeyFromObject(onUS), us))
	require.Contains(t, []kargo.PromotionPhase{"", kargo.PromotionPending}, us.Status.Phase, "no controller runs shard us")
	st := &kargo.Stage{}
	require.NoError(t, k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "us-stage"}, st))
	require.Zero(t, st.Status.ObservedGeneration, "no controller reconciled Stage us-stage")
	require.Empty(t, st.Status.FreightHistory)
	require.Empty(t, st.Status.Conditions)

	t.Run("a Stage moved to a shard with a controller is picked up", func(t *testing.T) {
		patch := client.MergeFrom(st.DeepCopy())
		st.Spec.Shard, st.Labels[kargo.ShardLabel] = testShard, testShard
		require.NoError(t, k8s.Patch(context.Background(), st, patch))
		testutil.Await(t, k8s, testutil.Named[kargo.Stage](ns, "us-stage"), 15*time.Second, func(s *kargo.Stage) bool { return s.Status.ObservedGeneration > 0 })
	})
}

// Every simulated controller keeps a heartbeat Lease as Kargo's do: one per
// shard in Kargo's namespace, named and labelled after the shard, held by
// the host, renewed every third of its duration; a controller stopped
// gracefully deletes its Lease and reconciles nothing more.
func TestEveryControllerKeepsAHeartbeatLease(t *testing.T) {
	ctx := context.Background()
	host, err := os.Hostname()
	require.NoError(t, err)
	lease := func(name string) *coordinationv1.Lease {
		return testutil.Named[coordinationv1.Lease](kargo.DefaultNamespace, name)
	}
	for shard, name := range map[string]string{"": "kargo-controller-unnamed", testShard: "kargo-controller-eu", stoppableShard: "kargo-controller-ap"} {
		l := testutil.Await(t, k8s, lease(name), 10*time.Second, func(*coordinationv1.Lease) bool { return true },
			"the controller of shard %q keeps a heartbeat Lease", shard)
		require.Equal(t, map[string]string{kargo.ControllerLabel: shard}, l.Labels, name)
		require.Equal(t, int32(testHeartbeatTTL/time.Second), *l.Spec.LeaseDurationSeconds, name)
		require.Equal(t, host, *l.Spec.HolderIdentity, name)
		require.NotNil(t, l.Spec.AcquireTime, name)
		require.NotNil(t, l.Spec.RenewTime, name)
		require.True(t, kargo.HeartbeatAlive(l, time.Now()), "%s is alive: %s", name, dump(l.Spec))

		acquired, renewed := l.Spec.AcquireTime.Time, l.Spec.RenewTime.Time
		l = testutil.Await(t, k8s, lease(name), 3*testHeartbeatTTL, func(l *coordinationv1.Lease) bool {
			return l.Spec.RenewTime.After(renewed)
		}, "%s is renewed every third of its duration", name)
		require.True(t, acquired.Equal(l.Spec.AcquireTime.Time), "a renewal keeps acquireTime")
	}
	var all coordinationv1.LeaseList
	require.NoError(t, k8s.List(ctx, &all, client.InNamespace(kargo.DefaultNamespace), client.HasLabels{kargo.ControllerLabel}))
	require.Len(t, all.Items, 3, "one heartbeat per simulated controller")

	ns := newProject(t)
	newFreight(t, ns, "f1")
	newStage(t, stage(ns, "eu-stage"), onShard(testShard))
	newStage(t, stage(ns, "ap-stage"), onShard(stoppableShard))

	stopCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	require.NoError(t, sim.StopShard(stopCtx, stoppableShard))
	err = k8s.Get(ctx, client.ObjectKeyFromObject(lease("kargo-controller-ap")), &coordinationv1.Lease{})
	require.True(t, apierrors.IsNotFound(err), "a controller stopped gracefully deletes its Lease: %v", err)
	require.NoError(t, k8s.Get(ctx, client.ObjectKeyFromObject(lease("kargo-controller-eu")), &coordinationv1.Lease{}),
		"the other shards' Leases stay")
	require.ErrorContains(t, sim.StopShard(stopCtx, "us"), `the simulator has none`)

	onAP := mustPromote(t, ns, "ap-stage", "f1")
	onEU := mustPromote(t, ns, "eu-stage", "f1")
	testutil.Await(t, k8s, onEU, 15*time.Second, testutil.PromotionPhaseIs(kargo.PromotionSucceeded))
	ap := &kargo.Promotion{}
	require.NoError(t, k8s.Get(ctx, client.ObjectKeyFromObject(onAP), ap))
	require.Contains(t, []kargo.PromotionPhase{"", kargo.PromotionPending}, ap.Status.Phase,
		"a stopped shard controller runs no Promotion, while the running one finished its own")
}
