//go:build integration

package fleetstage_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/inventory"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

// TestInventoryUpdatesThatChangeNoTarget selects 1,000 Argo CD cluster
// Secrets with one FleetStage and rotates every Secret's credentials, as a
// rotation job does: no FleetStage is planned again, and the controller
// writes nothing. A Secret whose label takes it out of the selection is
// planned again, and its target leaves.
func TestInventoryUpdatesThatChangeNoTarget(t *testing.T) {
	const n = 1000
	ctx := context.Background()
	ns := "replan"
	newProject(t, ns)
	ensureNamespace(t, "argocd")
	newProdStage(t, ns, "prod")
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("replan-%04d", i)
	}
	inParallel(t, names, func(name string) error {
		return env.Client.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: "argocd", Name: name,
				Labels: map[string]string{inventory.ArgoCDSecretTypeLabel: inventory.ArgoCDSecretTypeCluster, "suite": ns}},
			StringData: map[string]string{"server": "https://" + name + ".example", "config": bearerToken(name, 1)},
		})
	})
	fs := testutil.MakeFleetStage(ns, "fleet").FromStage("prod").Waves(threeWaves()...).Obj()
	fs.Spec.Targets.Sources = []fleetv1alpha1.TargetSource{{Kind: fleetv1alpha1.ArgoCDClusterSource,
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"suite": ns}}}}
	require.NoError(t, env.Client.Create(ctx, fs))
	waitReady(t, client.ObjectKeyFromObject(fs))
	require.Eventually(t, func() bool {
		return len(listGenerated(t, ns, "fleet", fleetv1alpha1.RoleTarget)) == n
	}, 2*time.Minute, 100*time.Millisecond)
	settle(t)

	plans, allPlans, wrote := plansOf(t, ns, "fleet"), plansOf(t, "", ""), writes.Writes()
	start := time.Now()
	inParallel(t, names, func(name string) error {
		patch := fmt.Sprintf(`{"data":{"config":%q}}`, base64.StdEncoding.EncodeToString([]byte(bearerToken(name, 2))))
		return env.Client.Patch(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "argocd", Name: name}},
			client.RawPatch(types.MergePatchType, []byte(patch)))
	})
	rotation := time.Since(start)
	require.Eventually(t, func() bool {
		list := &corev1.SecretList{}
		require.NoError(t, managerCache.List(ctx, list, client.InNamespace("argocd"), client.MatchingLabels{"suite": ns}))
		rotated := 0
		for i := range list.Items {
			if string(list.Items[i].Data["config"]) == bearerToken(list.Items[i].Name, 2) {
				rotated++
			}
		}
		return rotated == n
	}, wait, 100*time.Millisecond, "the controller sees every rotated Secret")
	settle(t)
	replans, written := plansOf(t, ns, "fleet")-plans, writes.Writes()-wrote
	fmt.Printf("report: token rotation of %d cluster Secrets selected by one FleetStage (%s): %.0f plans, %d writes\n",
		n, rotation.Round(10*time.Millisecond), replans, written)
	require.Zero(t, replans, "a token rotation plans the FleetStage again")
	require.Equal(t, allPlans, plansOf(t, "", ""), "a token rotation plans no FleetStage again")
	require.Zero(t, written, "a token rotation writes no FleetStage, Stage or ConfigMap")

	left := names[0]
	require.NoError(t, env.Client.Patch(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "argocd", Name: left}},
		client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"suite":"elsewhere"}}}`))))
	require.Eventually(t, func() bool {
		got := &fleetv1alpha1.FleetStage{}
		require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(fs), got))
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "fleet." + left}, &kargo.Stage{})
		return got.Status.Targets.Selected == n-1 && apierrors.IsNotFound(err)
	}, wait, tick, "a Secret leaving the selection takes its target out of the fleet")
	require.Positive(t, plansOf(t, ns, "fleet")-plans, "a Secret leaving the selection plans the FleetStage again")
}

// bearerToken is the Argo CD connection config of cluster name, holding
// its generation-th token.
func bearerToken(name string, generation int) string {
	return fmt.Sprintf(`{"bearerToken":"%s-token-%d"}`, name, generation)
}

// inParallel runs do for every name, 16 at a time.
func inParallel(t *testing.T, names []string, do func(name string) error) {
	t.Helper()
	work := make(chan string)
	errs := make(chan error, len(names))
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for name := range work {
				errs <- do(name)
			}
		})
	}
	for _, name := range names {
		work <- name
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

// plansOf sums kargo_fleet_fleetstage_plans_total in the controller's
// registry for one FleetStage, or for every FleetStage when name is empty.
func plansOf(t *testing.T, namespace, name string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	require.NoError(t, err)
	sum := 0.0
	for _, f := range families {
		if f.GetName() != "kargo_fleet_fleetstage_plans_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if name == "" || (labels["namespace"] == namespace && labels["fleetstage"] == name) {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}
