//go:build integration

package kargosim_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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
