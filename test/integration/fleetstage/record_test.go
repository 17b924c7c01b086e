//go:build integration

package fleetstage_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

// TestStageRecordsAreCollected changes a fleet's membership 100 times, one
// target joining and another leaving each time: each change writes a new Stage
// record, and the records it replaced are deleted, so the objects the
// controller keeps for a FleetStage stay bounded (the current record and
// the one before it, one Stage per target and wave) however often its
// targets change.
func TestStageRecordsAreCollected(t *testing.T) {
	ctx := context.Background()
	ns := "records"
	newProject(t, ns)
	newProdStage(t, ns, "prod")
	fs := testutil.MakeFleetStage(ns, "fleet").FromStage("prod").InlineTargets(targets(3, web)...).Obj()
	require.NoError(t, env.Client.Create(ctx, fs))
	waitReady(t, client.ObjectKeyFromObject(fs))

	const changes = 100
	seen := map[string]bool{}
	const size = 4
	for i := range changes {
		updateFleet(t, fs, func(fs *fleetv1alpha1.FleetStage) {
			// A window of the targets that slides by one: every change
			// brings a Stage the records have not seen.
			fs.Spec.Targets.Sources[0].Inline = targets(i+1+size, web)[i+1:]
		})
		require.Eventually(t, func() bool {
			cur := &fleetv1alpha1.FleetStage{}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(fs), cur); err != nil {
				return false
			}
			if cur.Status.StageRecord == "" || seen[cur.Status.StageRecord] {
				return false
			}
			seen[cur.Status.StageRecord] = true
			return len(listGenerated(t, ns, "fleet", fleetv1alpha1.RoleTarget)) == size
		}, wait, tick, "change %d: no new Stage record", i)
	}
	require.GreaterOrEqual(t, len(seen), changes, "every membership change wrote a record")

	cur := &fleetv1alpha1.FleetStage{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(fs), cur))
	var names []string
	require.Eventually(t, func() bool {
		list := &corev1.ConfigMapList{}
		require.NoError(t, env.Client.List(ctx, list, client.InNamespace(ns),
			client.MatchingLabels{fleetv1alpha1.FleetStageLabel: "fleet"}))
		names = names[:0]
		for _, cm := range list.Items {
			names = append(names, cm.Name)
		}
		return len(list.Items) <= 2
	}, wait, tick, "records left after %d changes", changes)
	require.Contains(t, names, cur.Status.StageRecord, "the record the status names is kept")
	targetStages := listGenerated(t, ns, "fleet", fleetv1alpha1.RoleTarget)
	require.Len(t, targetStages, size, "one target Stage per target")
	waveStages := listGenerated(t, ns, "fleet", fleetv1alpha1.RoleWave)
	require.Len(t, waveStages, len(cur.Status.Waves), "one wave Stage per wave")
	t.Logf("after %d membership changes: %d Stage records, %d target Stages, %d wave Stages", changes, len(names),
		len(targetStages), len(waveStages))
}

func web(int) map[string]string { return map[string]string{"tier": "web"} }
