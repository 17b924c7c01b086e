//go:build integration

package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/envtest"
	"github.com/kargo-fleet/kargo-fleet/internal/inventory"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

// clusterSecret is an Argo CD cluster Secret: one inventory entry.
func clusterSecret(name, tier string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: fleetv1alpha1.DefaultArgoCDNamespace, Name: "cluster-" + name,
			Labels: map[string]string{inventory.ArgoCDSecretTypeLabel: inventory.ArgoCDSecretTypeCluster,
				"tier": tier, "fleet": "plan-test"}},
		Data: map[string][]byte{"name": []byte(name), "server": []byte("https://" + name + ".example.com")},
	}
}

// argoFleet is a FleetStage over the plan-test Argo CD clusters with a
// pilot wave (tier=pilot) and a catch-all wave.
func argoFleet(ns, name string) *fleetv1alpha1.FleetStage {
	fs := testutil.MakeFleetStage(ns, name).Waves(
		fleetv1alpha1.Wave{Name: "pilot", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "pilot"}}},
		fleetv1alpha1.Wave{Name: "rest", MaxFailures: testutil.Int(1)},
	).Obj()
	fs.Spec.Targets.Sources = []fleetv1alpha1.TargetSource{{Kind: fleetv1alpha1.ArgoCDClusterSource,
		Namespace: fleetv1alpha1.DefaultArgoCDNamespace,
		Selector:  &metav1.LabelSelector{MatchLabels: map[string]string{"fleet": "plan-test"}}}}
	return fs
}

func create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := env.Client.Create(ctx(), obj); err != nil && !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
}

// writeFleetStage writes fs as a YAML file, as a user keeps it in Git.
func writeFleetStage(t *testing.T, fs *fleetv1alpha1.FleetStage) string {
	t.Helper()
	fs = fs.DeepCopy()
	fs.TypeMeta = metav1.TypeMeta{APIVersion: fleetv1alpha1.GroupVersion.String(), Kind: "FleetStage"}
	fs.ResourceVersion, fs.UID, fs.CreationTimestamp, fs.ManagedFields, fs.Generation = "", "", metav1.Time{}, nil, 0
	fs.Status = fleetv1alpha1.FleetStageStatus{}
	raw, err := yaml.Marshal(fs)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), fs.Name+".yaml")
	require.NoError(t, os.WriteFile(path, raw, 0o600))
	return path
}

// TestPlan plans FleetStages of the cluster over the Argo CD cluster
// Secrets they list, and changed FleetStage files against them.
func TestPlan(t *testing.T) {
	const ns = "plan-shop"
	create(t, envtest.ProjectNamespace(ns))
	create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fleetv1alpha1.DefaultArgoCDNamespace}})
	for _, s := range []*corev1.Secret{clusterSecret("us-east-1", "pilot"), clusterSecret("eu-west-1", "standard"),
		clusterSecret("eu-west-2", "standard"), clusterSecret("ap-south-1", "standard")} {
		create(t, s)
	}
	fs := argoFleet(ns, "prod")
	create(t, fs)

	t.Run("the plan of a FleetStage in the cluster, inventory read from the cluster", func(t *testing.T) {
		out, _, err := kargoFleet("plan", "prod", "-n", ns, "-o", "json")
		require.NoError(t, err)
		var pv plan.PlanPreview
		require.NoError(t, json.Unmarshal([]byte(out), &pv), out)
		require.Equal(t, 4, pv.Candidates)
		require.Equal(t, []string{"us-east-1"}, pv.Waves[0].Targets)
		require.ElementsMatch(t, []string{"eu-west-1", "eu-west-2", "ap-south-1"}, pv.Waves[1].Targets)
		require.Equal(t, 1, pv.Waves[1].MaxFailures)

		text, _, err := kargoFleet("plan", "-n", ns)
		require.NoError(t, err, "the Project's only FleetStage needs no name")
		require.Contains(t, text, "4 candidates, 4 selected, 0 excluded, 0 not selected, 0 unassigned")
		require.Regexp(t, `\npilot\s+1\s+`, text)
	})

	t.Run("--inventory-namespaces: sources in the namespaces the controller allows", func(t *testing.T) {
		const gitops = "plan-gitops"
		create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: gitops}})
		s := clusterSecret("gitops-1", "pilot")
		s.Namespace = gitops
		create(t, s)
		elsewhere := argoFleet(ns, "gitops")
		elsewhere.Spec.Targets.Sources[0].Namespace = gitops
		file := writeFleetStage(t, elsewhere)
		_, _, err := kargoFleet("plan", "-f", file, "-n", ns)
		require.ErrorContains(t, err, "--inventory-namespaces", "not allowed by default, as the controller would refuse it")
		out, _, err := kargoFleet("plan", "-f", file, "-n", ns, "--inventory-namespaces", gitops, "-o", "json")
		require.NoError(t, err)
		require.Contains(t, out, "gitops-1")
	})

	t.Run("a cluster added to the inventory joins the plan", func(t *testing.T) {
		s := clusterSecret("sa-east-1", "pilot")
		create(t, s)
		t.Cleanup(func() { require.NoError(t, client.IgnoreNotFound(env.Client.Delete(ctx(), s))) })
		out, _, err := kargoFleet("plan", "prod", "-n", ns, "-o", "jsonpath={.waves[0].targets}")
		require.NoError(t, err)
		require.Contains(t, out, "sa-east-1")
	})

	t.Run("a changed file against the cluster's FleetStage: what would move", func(t *testing.T) {
		changed := argoFleet(ns, "prod")
		changed.Spec.Waves = []fleetv1alpha1.Wave{
			{Name: "pilot", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "pilot"}}},
			{Name: "europe", Expression: `labels.tier == "standard" && name startsWith "eu-"`, MaxFailures: testutil.Int(1)},
			{Name: "rest", MaxFailures: testutil.Int(0)},
		}
		file := writeFleetStage(t, changed)

		out, _, err := kargoFleet("plan", "-f", file, "-n", ns, "-o", "json")
		require.NoError(t, err)
		var d plan.PlanDiff
		require.NoError(t, json.Unmarshal([]byte(out), &d), out)
		require.Equal(t, []plan.TargetMove{
			{ID: "eu-west-1", Name: "eu-west-1", From: "rest", To: "europe"},
			{ID: "eu-west-2", Name: "eu-west-2", From: "rest", To: "europe"},
		}, d.Moved)
		require.Empty(t, d.Joined)
		require.Empty(t, d.Left)
		require.Equal(t, []plan.WaveChange{
			{Name: "europe", Change: plan.WaveAdded, MembersAfter: 2},
			{Name: "rest", Change: plan.WaveChanged, MembersBefore: 3, MembersAfter: 1,
				Settings: []plan.SettingChange{{Field: "maxFailures", From: "1", To: "0"}}},
		}, d.Waves)

		text, _, err := kargoFleet("plan", "-f", file, "-n", ns)
		require.NoError(t, err)
		require.Contains(t, text, fmt.Sprintf("Plan of %s against FleetStage %s/prod in the cluster:", file, ns))
		require.Regexp(t, `moved\s+eu-west-1\s+rest\s+europe`, text)
		require.Regexp(t, `rest\s+changed\s+3 -> 1\s+maxFailures 1 -> 0`, text)

		same, _, err := kargoFleet("plan", "-f", writeFleetStage(t, fs), "-n", ns)
		require.NoError(t, err)
		require.Contains(t, same, "No change: every target keeps its wave.")
	})

	t.Run("a FleetStage not in the cluster yet: every target joins", func(t *testing.T) {
		file := writeFleetStage(t, argoFleet(ns, "staging"))
		out, _, err := kargoFleet("plan", "-f", file, "-n", ns)
		require.NoError(t, err)
		require.Contains(t, out, "against no FleetStage "+ns+"/staging in the cluster yet:")
		require.Contains(t, out, "0 moved, 4 joined, 0 left")
	})

	t.Run("an invalid file names the field, before anything is planned", func(t *testing.T) {
		bad := argoFleet(ns, "prod")
		bad.Spec.Waves[1].Expression = "labels.tier ==="
		_, _, err := kargoFleet("plan", "-f", writeFleetStage(t, bad), "-n", ns)
		require.ErrorContains(t, err, `FleetStage "prod" is invalid:`)
		require.ErrorContains(t, err, "spec.waves[1].expression")
	})

	t.Run("--local keeps the offline plan: no cluster source is read", func(t *testing.T) {
		_, errOut, err := kargoFleet("plan", "-f", writeFleetStage(t, fs), "--local")
		require.Contains(t, errOut, "(ArgoCDCluster) needs a cluster and is skipped")
		require.ErrorContains(t, err, "the plan selects no target", "with its only source skipped, nothing is planned")
	})

	t.Run("kubectl's impersonation flags reach the API server", func(t *testing.T) {
		_, _, err := kargoFleet("plan", "prod", "-n", ns, "--as", "someone-without-rights")
		require.Error(t, err)
		require.True(t, strings.Contains(err.Error(), "forbidden"), err.Error())
		require.Contains(t, err.Error(), `User "someone-without-rights"`)
	})
}
