package policy

import (
	"testing"

	"github.com/stretchr/testify/require"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
)

func TestCheckPlanAndSummarize(t *testing.T) {
	pci, _ := Compile(freightPolicy("pci", "", pciRule))
	skip, _ := Compile(freightPolicy("no-latest", fleetv1alpha1.BlockedTargetsSkip,
		fleetv1alpha1.FreightRule{Name: "tags", Targets: `target.labels.ring == "critical"`, Require: `none(freight.images, {.tag == "latest"})`}))
	member := func(id string, labels map[string]string) plan.Target {
		return plan.Target{ID: id, Name: id, Labels: labels}
	}
	p := &plan.WavePlan{Waves: []plan.PlannedWave{
		{Name: "pilot", Members: []plan.Target{member("p1", nil)}},
		{Name: "general", Members: []plan.Target{member("g1", map[string]string{"tier": "pci"}), member("g2", nil),
			member("g3", map[string]string{"tier": "pci"}), member("g4", map[string]string{"ring": "critical"})}},
	}}
	f := Freight{Name: "f", Images: []Image{{RepoURL: "docker.io/x", Tag: "latest"}}}
	require.Nil(t, CheckPlan(nil, &f, nil, p), "no policy: nothing to check")
	blocked := CheckPlan([]*Compiled{pci, skip}, &f, nil, p)
	require.Len(t, blocked, 3)
	got := Summarize(p, blocked)
	require.Len(t, got, 1, "pilot has nothing blocked")
	require.Equal(t, "general", got[0].Wave)
	require.True(t, got[0].Hold, "pci holds the wave")
	require.Len(t, got[0].Groups, 2)
	require.Equal(t, []string{"g1", "g3"}, got[0].Groups[0].Targets)
	require.Contains(t, got[0].Groups[0].Rules, "rule pci-digest of FreightPolicy pci")
	require.Equal(t, []string{"g4"}, got[0].Groups[1].Targets)

	onlySkip := Summarize(p, CheckPlan([]*Compiled{skip}, &f, nil, p))
	require.False(t, onlySkip[0].Hold, "a Skip policy alone does not hold the wave")
}
