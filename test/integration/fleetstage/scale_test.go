//go:build integration

package fleetstage_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

// TestScaleExpansion expands a FleetStage over 1,000 targets on the real
// apiserver and reports the time until every Stage is in step, the API writes
// it took and the size of the FleetStage status; a second reconcile of the
// unchanged FleetStage must write nothing, and a changed target and wave
// Stage are restored (the time is reported).
func TestScaleExpansion(t *testing.T) {
	const n = 1000
	ctx := context.Background()
	ns := "scale"
	newProject(t, ns)
	newProdStage(t, ns, "prod")
	regions := []string{"eu-west", "eu-central", "us-east", "us-west", "ap-south"}
	ts := targets(n, func(i int) map[string]string {
		tier := "web"
		if i%50 == 0 {
			tier = "critical"
		}
		return map[string]string{"region": regions[i%len(regions)], "tier": tier}
	})
	pct := intstr.FromString("10%")
	fs := testutil.MakeFleetStage(ns, "fleet").FromStage("prod").InlineTargets(ts...).Waves(
		fleetv1alpha1.Wave{Name: "pilot", Count: testutil.Int(5)},
		fleetv1alpha1.Wave{Name: "canary", Count: &pct},
		fleetv1alpha1.Wave{Name: "general", Expression: `labels.tier != "critical"`},
		fleetv1alpha1.Wave{Name: "critical"},
	).Obj()

	before := writes.Writes()
	start := time.Now()
	require.NoError(t, env.Client.Create(ctx, fs))
	got := waitReady(t, client.ObjectKeyFromObject(fs))
	require.Eventually(t, func() bool {
		return len(listGenerated(t, ns, "fleet", fleetv1alpha1.RoleTarget)) == n
	}, 2*time.Minute, 100*time.Millisecond)
	elapsed := time.Since(start)
	settle(t)
	expandWrites := writes.Writes() - before

	require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(fs), got))
	raw, err := json.Marshal(got.Status)
	require.NoError(t, err)
	require.EqualValues(t, n, got.Status.Targets.Selected)
	require.Len(t, listGenerated(t, ns, "fleet", fleetv1alpha1.RoleWave), 4)
	var all kargo.StageList
	require.NoError(t, env.Client.List(ctx, &all, client.InNamespace(ns)))
	large := meta.FindStatusCondition(got.Status.Conditions, fleetv1alpha1.FreightStatusLargeCondition)
	require.NotNil(t, large, "the Freight status estimate is reported")
	require.Equal(t, metav1.ConditionFalse, large.Status)
	require.Equal(t, fleetv1alpha1.WithinLimitReason, large.Reason)
	require.Contains(t, large.Message, fmt.Sprintf("a Freight in all %d Stages of Project %q", len(all.Items), ns))

	before = writes.Writes()
	patch := client.MergeFrom(got.DeepCopy())
	got.Annotations = map[string]string{"example.com/poke": "1"}
	require.NoError(t, env.Client.Patch(ctx, got, patch))
	settle(t)
	again := writes.Writes() - before
	require.Zero(t, again, "a second reconcile of the unchanged FleetStage writes nothing")

	for _, name := range []string{"fleet.cluster-500", "fleet-canary"} {
		took := changeAndAwaitRestore(t, ns, name)
		fmt.Printf("report: restore of Stage %s in a %d-target fleet: %s\n", name, n, took.Round(time.Millisecond))
	}

	fmt.Printf("report: FleetStage expansion over %d targets: all Stages synced in %s, %d API writes (%.2f per target), status %d bytes, second reconcile %d writes\n",
		n, elapsed.Round(10*time.Millisecond), expandWrites, float64(expandWrites)/n, len(raw), again)
	require.Less(t, len(raw), 64*1024)
	// One create per Stage, the Stage record, the Project's promotion-guard
	// label and a few status writes, and the audit trail of the membership
	// Events (a segment written and its head in the status, per batch).
	require.LessOrEqual(t, expandWrites, int64(n+4+2+16+4), "one create per Stage plus the Stage record, the guard label, a few status writes and the audit trail")
}
