package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kargo-fleet/kargo-fleet/internal/plan"
)

const planFleetStage = `apiVersion: fleet.kargo-fleet.io/v1alpha1
kind: FleetStage
metadata:
  name: prod
  namespace: shop
spec:
  stage: {fromStage: prod}
  targets:
    sources:
    - kind: Inline
      inline:
      - {name: us-east-1, labels: {tier: pilot}}
      - {name: eu-west-1, labels: {tier: standard}}
  waves:
  - name: pilot
    selector: {matchLabels: {tier: pilot}}
  - name: rest
    maxFailures: 10%
`

const planTargets = `- {name: ap-south-1, labels: {tier: standard}}
- {name: us-west-2, labels: {tier: pilot, frozen: "yes", fleet.kargo-fleet.io/frozen: "true"}}
`

func TestPlanCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
		return path
	}
	fsFile := write("prod.yaml", "# a Stage first, as in examples\napiVersion: kargo.akuity.io/v1alpha1\nkind: Stage\n"+
		"metadata: {name: prod}\n---\n"+planFleetStage)
	targets := write("targets.yaml", planTargets)
	wrapped := write("wrapped.yaml", "targets:\n"+strings.ReplaceAll("\n"+planTargets, "\n", "\n  "))
	newer := write("newer.yaml", strings.Replace(planFleetStage, "tier: pilot}}\n  - name: rest", "tier: none}}\n  - name: rest", 1))
	argo := write("argo.yaml", strings.Replace(planFleetStage, "    - kind: Inline\n",
		"    - kind: ArgoCDCluster\n    - kind: Inline\n", 1))
	invalid := write("invalid.yaml", strings.Replace(planFleetStage, "maxFailures: 10%", "expression: 'labels.tier ==='", 1))
	noNS := write("nons.yaml", strings.Replace(planFleetStage, "  namespace: shop\n", "", 1))
	empty := write("empty.yaml", strings.Replace(planFleetStage, "    - kind: Inline\n      inline:\n"+
		"      - {name: us-east-1, labels: {tier: pilot}}\n      - {name: eu-west-1, labels: {tier: standard}}\n",
		"    - kind: Inline\n      inline: []\n", 1))

	tests := []struct {
		name       string
		args       []string
		assertions func(t *testing.T, out, errOut string, err error)
	}{
		{
			name: "table with extra targets",
			args: []string{"-f", fsFile, "--targets", targets},
			assertions: func(t *testing.T, out, errOut string, err error) {
				require.NoError(t, err)
				require.Empty(t, errOut)
				require.Contains(t, out, "4 candidates, 3 selected, 1 excluded, 0 not selected, 0 unassigned")
				require.Contains(t, out, "pilot  1")
				require.Contains(t, out, "us-west-2")
				require.Contains(t, out, "ExcludeLabel")
			},
		},
		{
			name: "json, targets wrapped in an object",
			args: []string{"-f", fsFile, "--targets", wrapped, "-o", "json"},
			assertions: func(t *testing.T, out, _ string, err error) {
				require.NoError(t, err)
				var pv plan.PlanPreview
				require.NoError(t, json.Unmarshal([]byte(out), &pv))
				require.Equal(t, 3, pv.Selected)
				require.Equal(t, []string{"us-east-1"}, pv.Waves[0].Targets)
				require.ElementsMatch(t, []string{"eu-west-1", "ap-south-1"}, pv.Waves[1].Targets)
				require.Equal(t, 0, pv.Waves[1].MaxFailures)
			},
		},
		{
			name: "diff against the current version",
			args: []string{"-f", newer, "--diff-against", fsFile},
			assertions: func(t *testing.T, out, _ string, err error) {
				require.NoError(t, err)
				require.Contains(t, out, "1 moved, 0 joined, 0 left")
				require.Regexp(t, `moved\s+us-east-1\s+pilot\s+rest`, out)
			},
		},
		{
			name: "diff as json",
			args: []string{"-f", newer, "--diff-against", fsFile, "-o", "json"},
			assertions: func(t *testing.T, out, _ string, err error) {
				require.NoError(t, err)
				var d plan.PlanDiff
				require.NoError(t, json.Unmarshal([]byte(out), &d))
				require.Equal(t, []plan.TargetMove{{ID: "us-east-1", Name: "us-east-1", From: "pilot", To: "rest"}}, d.Moved)
			},
		},
		{
			name: "sources that need a cluster are skipped with a warning",
			args: []string{"-f", argo},
			assertions: func(t *testing.T, out, errOut string, err error) {
				require.NoError(t, err)
				require.Contains(t, errOut, "argo.yaml: spec.targets.sources[0] (ArgoCDCluster) needs a cluster and is skipped")
				require.Contains(t, out, "2 candidates")
			},
		},
		{
			name: "an invalid spec names the field",
			args: []string{"-f", invalid},
			assertions: func(t *testing.T, _, _ string, err error) {
				require.ErrorContains(t, err, `FleetStage "prod" is invalid:`)
				require.ErrorContains(t, err, "spec.waves[1].expression")
			},
		},
		{
			name: "no namespace warns that the wave order may differ",
			args: []string{"-f", noNS},
			assertions: func(t *testing.T, _, errOut string, err error) {
				require.NoError(t, err)
				require.Contains(t, errOut, "nons.yaml: no namespace in the file or -n")
			},
		},
		{
			name: "a plan that selects no target fails",
			args: []string{"-f", empty},
			assertions: func(t *testing.T, out, _ string, err error) {
				require.EqualError(t, err, empty+": the plan selects no target")
				require.Contains(t, out, "0 candidates", "the plan is printed first")
			},
		},
		{
			name: "no FleetStage in the file",
			args: []string{"-f", targets},
			assertions: func(t *testing.T, _, _ string, err error) {
				require.ErrorContains(t, err, "holds no FleetStage")
			},
		},
		{
			name: "missing file",
			args: []string{"-f", filepath.Join(dir, "nope.yaml")},
			assertions: func(t *testing.T, _, _ string, err error) {
				require.ErrorContains(t, err, "error reading")
			},
		},
		{
			name: "-f is required",
			assertions: func(t *testing.T, _, _ string, err error) {
				require.EqualError(t, err, "--local plans a file: -f FLEETSTAGE.yaml is required")
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var out, errOut bytes.Buffer
			cmd := newPlanCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, kubeOptions{})
			cmd.SetArgs(append([]string{"--local"}, tt.args...))
			cmd.SilenceErrors, cmd.SilenceUsage = true, true
			cmd.SetOut(&out)
			cmd.SetErr(&errOut)
			err := cmd.Execute()
			tt.assertions(t, out.String(), errOut.String(), err)
		})
	}
}

func TestPlanCommand_stdinAndExample(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	cmd := newPlanCommand(genericiooptions.IOStreams{In: strings.NewReader(planFleetStage), Out: &out, ErrOut: &errOut}, kubeOptions{})
	cmd.SetArgs([]string{"-f", "-", "--local"})
	require.NoError(t, cmd.Execute())
	require.Contains(t, out.String(), "2 candidates, 2 selected")

	out.Reset()
	cmd = newPlanCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, kubeOptions{})
	cmd.SetArgs([]string{"-f", filepath.Join("..", "..", "examples", "fleetstage", "edge-inline.yaml"), "--local"})
	require.NoError(t, cmd.Execute())
	require.Contains(t, out.String(), "3 candidates, 3 selected")
}

func TestPlanFileWithoutACluster(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "prod.yaml")
	require.NoError(t, os.WriteFile(path, []byte(planFleetStage), 0o600))
	kubeconfig := filepath.Join(dir, "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, []byte("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "+
		"'https://127.0.0.1:1'}}]\ncontexts: [{name: c, context: {cluster: c}}]\ncurrent-context: c\n"), 0o600))
	var out bytes.Buffer
	cmd := newPlanCommand(testStreams(&out), kubeOptions{})
	_, err := execute(cmd, &out, "-f", path, "--kubeconfig", kubeconfig, "--request-timeout", "2s")
	require.ErrorContains(t, err, "--local plans the file offline")
	require.Equal(t, apierrors.NewNotFound(schema.GroupResource{Resource: "stages"}, "x"),
		withLocalHint(apierrors.NewNotFound(schema.GroupResource{Resource: "stages"}, "x")), "an API server's answer needs no hint")
}

// TestPlanDocumentedExample runs docs/cli.md's offline plan of the shipped
// examples.
func TestPlanDocumentedExample(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	cmd := newPlanCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, kubeOptions{})
	cmd.SetArgs([]string{"-f", "../../examples/fleetstage/prod-fleet.yaml", "--local", "--targets", "../../examples/plan/clusters.yaml"})
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	require.NoError(t, cmd.Execute())
	require.Contains(t, out.String(), "10 candidates, 7 selected, 1 excluded, 2 not selected, 0 unassigned")
	require.Regexp(t, `critical\s+2\s+2\s+0\s+Required\s+us-east-1-c, eu-west-1-c`, out.String())
}
