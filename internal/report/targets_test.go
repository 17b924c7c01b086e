package report

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/labels"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
	"github.com/kargo-fleet/kargo-fleet/internal/render"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

const targetsFreight = "1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d"

// targetStage builds a target Stage the way render.Stages labels it.
func targetStage(fleet, wave, name string, vars ...string) kargo.Stage {
	id := plan.TargetID(name)
	return *testutil.MakeStage("shop", render.TargetStageName(fleet, id)).Target(fleet, wave, id).
		Annotations(map[string]string{fleetv1alpha1.TargetNameAnnotation: name}).Vars(vars...).Obj()
}

func targetsInput() TargetsInput {
	fs := testutil.MakeFleetStage("shop", "prod").Waves(fleetv1alpha1.Wave{Name: "pilot"}, fleetv1alpha1.Wave{Name: "canary"}).Obj()
	long := "eu-west-1-production-cluster-with-a-very-long-inventory-name-0042"
	running := targetStage("prod", "canary", "eu-west-1-b")
	running.Status.FreightHistory = []kargo.FreightCollection{{Items: map[string]kargo.FreightReference{
		"Warehouse/app": {Name: targetsFreight}}}}
	pruned := targetStage("prod", "canary", "gone")
	pruned.Annotations[fleetv1alpha1.PruneAnnotation] = "true"
	wave := *testutil.MakeStage("shop", "prod-pilot").Wave("prod").Obj()
	return TargetsInput{
		FleetStage: fs,
		Stages:     []kargo.Stage{running, wave, pruned, targetStage("prod", "pilot", long), targetStage("prod", "canary", "eu-west-1-a")},
		Inventory: map[string]plan.Target{
			"eu-west-1-a": {ID: "eu-west-1-a", Name: "eu-west-1-a", Source: "ArgoCDCluster",
				Labels: map[string]string{"region": "eu-west-1", "tier": "canary"}, Params: map[string]string{"server": "https://a.example"}},
			"eu-west-1-b": {ID: "eu-west-1-b", Name: "eu-west-1-b", Source: "ArgoCDCluster",
				Labels: map[string]string{"region": "eu-west-1"}, Params: map[string]string{"server": "https://b.example"}},
		},
		Aliases: map[string]string{targetsFreight: "v1.4.0"},
	}
}

func TestBuildTargets(t *testing.T) {
	t.Parallel()
	l := BuildTargets(targetsInput())
	require.Equal(t, "shop", l.Project)
	names := make([]string, 0, len(l.Targets))
	for _, tg := range l.Targets {
		names = append(names, tg.Stage)
	}
	require.Equal(t, []string{
		"prod.eu-west-1-production-cluster-with-a-very-long-inv-d57f036e", // hashed: longer than 63
		"prod.eu-west-1-a", "prod.eu-west-1-b",
	}, names, "wave order, then Stage name; wave and pruned Stages left out")
	require.Equal(t, "shop:prod.eu-west-1-a", l.Targets[1].AuthorizedStage)
	require.Equal(t, []FreightName{{Name: targetsFreight, Alias: "v1.4.0"}}, l.Targets[2].Freight)
	require.Nil(t, l.Targets[0].Labels, "a target missing from the inventory has no labels")

	tests := []struct {
		name     string
		wave     string
		selector string
		want     []string
	}{
		{name: "wave", wave: "pilot", want: []string{"eu-west-1-production-cluster-with-a-very-long-inventory-name-0042"}},
		{name: "selector", selector: "tier=canary", want: []string{"eu-west-1-a"}},
		{name: "selector and wave", wave: "canary", selector: "region=eu-west-1", want: []string{"eu-west-1-a", "eu-west-1-b"}},
		{name: "nothing", wave: "pilot", selector: "region", want: []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sel, err := labels.Parse(tt.selector)
			require.NoError(t, err)
			got := []string{}
			for _, tg := range l.Filter(tt.wave, sel).Targets {
				got = append(got, tg.Name)
			}
			require.Equal(t, tt.want, got)
		})
	}
}

func TestStageParams(t *testing.T) {
	t.Parallel()
	source, params := stageParams([]kargo.ExpressionVariable{
		{Name: "app", Value: "guestbook"}, {Name: render.VarFleetStage, Value: "prod"}, {Name: render.VarTargetSource, Value: "Inline"},
		{Name: "cluster_server", Value: "https://a"},
	})
	require.Equal(t, "Inline", source)
	require.Equal(t, map[string]string{"cluster_server": "https://a"}, params, "only the vars after the fleet's own")
}

func TestRenderTargets(t *testing.T) {
	t.Parallel()
	l := BuildTargets(targetsInput())
	for _, tt := range []struct {
		name   string
		render func(*bytes.Buffer) error
	}{
		{name: "targets.golden", render: func(b *bytes.Buffer) error { return RenderTargetsTable(b, l, false) }},
		{name: "targets-wide.golden", render: func(b *bytes.Buffer) error { return RenderTargetsTable(b, l, true) }},
		{name: "targets.json.golden", render: func(b *bytes.Buffer) error { return RenderTargetsJSON(b, l) }},
		{name: "targets.yaml.golden", render: func(b *bytes.Buffer) error { return RenderTargetsYAML(b, l) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			require.NoError(t, tt.render(&buf))
			golden(t, tt.name, buf.Bytes())
		})
	}
}
