package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/render"
	"github.com/kargo-fleet/kargo-fleet/internal/report"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

func TestTargetsCommand(t *testing.T) {
	t.Parallel()
	fs := testutil.MakeFleetStage("shop", "prod").
		Waves(fleetv1alpha1.Wave{Name: "pilot"}, fleetv1alpha1.Wave{Name: "rest"}).
		InlineTargets(
			fleetv1alpha1.InlineTarget{Name: "eu-1", Labels: map[string]string{"region": "eu"}, Params: map[string]string{"server": "https://eu-1"}},
			fleetv1alpha1.InlineTarget{Name: "us-1", Labels: map[string]string{"region": "us"}},
		).Obj()
	stage := func(id, wave string) *kargo.Stage {
		return testutil.MakeStage("shop", "prod."+id).Target("prod", wave, id).Obj()
	}
	objs := []client.Object{fs, stage("eu-1", "pilot"), stage("us-1", "rest")}

	tests := []struct {
		name       string
		args       []string
		assertions func(t *testing.T, out string, err error)
	}{
		{
			name: "table",
			args: []string{"prod", "-n", "shop"},
			assertions: func(t *testing.T, out string, err error) {
				require.NoError(t, err)
				require.Equal(t, "STAGE      TARGET  WAVE   FREIGHT\nprod.eu-1  eu-1    pilot  <none>\nprod.us-1  us-1    rest   <none>\n", out)
			},
		},
		{
			name: "json with a label selector: labels and params from the inventory",
			args: []string{"-n", "shop", "-l", "region=eu", "-o", "json"},
			assertions: func(t *testing.T, out string, err error) {
				require.NoError(t, err)
				var l report.TargetList
				require.NoError(t, json.Unmarshal([]byte(out), &l))
				require.Len(t, l.Targets, 1)
				require.Equal(t, "shop:prod.eu-1", l.Targets[0].AuthorizedStage)
				require.Equal(t, map[string]string{"server": "https://eu-1"}, l.Targets[0].Params)
				require.Equal(t, "Inline", l.Targets[0].Source)
			},
		},
		{
			name: "wave filter, yaml",
			args: []string{"-n", "shop", "--wave", "rest", "-o", "yaml"},
			assertions: func(t *testing.T, out string, err error) {
				require.NoError(t, err)
				require.Contains(t, out, "stage: prod.us-1")
				require.NotContains(t, out, "prod.eu-1")
			},
		},
		{
			name: "unknown wave",
			args: []string{"-n", "shop", "--wave", "nope"},
			assertions: func(t *testing.T, _ string, err error) {
				require.EqualError(t, err, `--wave "nope": FleetStage "prod" has no such wave`)
			},
		},
		{
			name: "bad selector",
			args: []string{"-n", "shop", "-l", "a in (b"},
			assertions: func(t *testing.T, _ string, err error) {
				require.ErrorContains(t, err, `--selector "a in (b"`)
			},
		},
		{
			name: "bad output",
			args: []string{"-n", "shop", "-o", "xml"},
			assertions: func(t *testing.T, _ string, err error) {
				require.ErrorContains(t, err, `--output "xml": use one of wide, json, yaml, kyaml, name, `)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			cmd := newTargetsCommand(testStreams(&out), kubeOptions{client: newFakeClient("", objs...)})
			got, err := execute(cmd, &out, tt.args...)
			tt.assertions(t, got, err)
		})
	}
}

// TestTargetsCommand_inventoryUnreadable: without the right to read the
// inventory the targets are still listed, params from their Stages'
// variables, and a warning says why.
func TestTargetsCommand_inventoryUnreadable(t *testing.T) {
	t.Parallel()
	fs := testutil.MakeFleetStage("shop", "prod").Obj()
	fs.Spec.Targets.Sources = []fleetv1alpha1.TargetSource{{Kind: fleetv1alpha1.ArgoCDClusterSource}}
	st := &kargo.Stage{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "prod.eu-1", Labels: map[string]string{
			fleetv1alpha1.FleetStageLabel: "prod", fleetv1alpha1.RoleLabel: fleetv1alpha1.RoleTarget,
			fleetv1alpha1.WaveLabel: "all", fleetv1alpha1.TargetLabel: "eu-1"}},
		Spec: kargo.StageSpec{Vars: []kargo.ExpressionVariable{
			{Name: render.VarTargetSource, Value: "ArgoCDCluster"}, {Name: "server", Value: "https://eu-1"}}},
	}
	record := testutil.RecordStages(fs, st)
	c := fake.NewClientBuilder().WithScheme(cliScheme()).WithObjects(fs, st, record).WithInterceptorFuncs(interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if _, ok := list.(*corev1.SecretList); ok {
				return apierrors.NewForbidden(corev1.Resource("secrets"), "", errors.New("no access"))
			}
			return c.List(ctx, list, opts...)
		},
	}).Build()
	var out, errOut bytes.Buffer
	cmd := newTargetsCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, kubeOptions{client: c})
	_, err := execute(cmd, &out, "-n", "shop", "-o", "wide")
	require.NoError(t, err)
	require.Contains(t, out.String(), "prod.eu-1  eu-1    all   <none>   ArgoCDCluster  <none>  server=https://eu-1")
	require.Contains(t, errOut.String(), "warning: target labels are not shown and params come from the Stages' variables")
}

// TestTargetsCommand_unrecordedStage: a Stage labelled for the fleet (and
// pointing its owner reference at it) that the FleetStage never recorded
// is not listed as a target; a warning names it.
func TestTargetsCommand_unrecordedStage(t *testing.T) {
	t.Parallel()
	fs := testutil.MakeFleetStage("shop", "prod").Obj()
	target := func(id string) *kargo.Stage {
		return &kargo.Stage{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "prod." + id, Labels: map[string]string{
			fleetv1alpha1.FleetStageLabel: "prod", fleetv1alpha1.RoleLabel: fleetv1alpha1.RoleTarget,
			fleetv1alpha1.WaveLabel: "all", fleetv1alpha1.TargetLabel: id}}}
	}
	recorded, forged := target("eu-1"), target("eu-2")
	record := testutil.RecordStages(fs, recorded)
	c := fake.NewClientBuilder().WithScheme(cliScheme()).WithObjects(fs, recorded, forged, record).Build()
	var out, errOut bytes.Buffer
	cmd := newTargetsCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, kubeOptions{client: c})
	_, err := execute(cmd, &out, "-n", "shop", "-o", "name")
	require.NoError(t, err)
	require.Equal(t, "stage.kargo.akuity.io/prod.eu-1\n", out.String())
	require.Contains(t, errOut.String(), `1 Stage(s) labelled for FleetStage "prod" are not Stages it generated and are not shown: prod.eu-2`)
}
