package webhook

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

func TestCeilingWarning(t *testing.T) {
	t.Parallel()
	inline := func(n int) *fleetv1alpha1.FleetStage {
		fs := testutil.MakeFleetStage("shop", "prod").Obj()
		targets := make([]fleetv1alpha1.InlineTarget, n)
		for i := range targets {
			targets[i] = fleetv1alpha1.InlineTarget{Name: fmt.Sprintf("cluster-%05d", i)}
		}
		fs.Spec.Targets.Sources = []fleetv1alpha1.TargetSource{{Kind: fleetv1alpha1.InlineSource, Inline: targets}}
		return fs
	}
	selected := func(n int32) *fleetv1alpha1.FleetStage {
		fs := testutil.MakeFleetStage("shop", "prod").Obj()
		fs.Status.Targets.Selected = n
		return fs
	}
	// "prod.cluster-00001" is 18 characters: 146 bytes per Stage, two
	// thirds of the limit at 7,181 Stages.
	tests := []struct {
		name     string
		fs, old  *fleetv1alpha1.FleetStage
		wantWarn bool
	}{
		{name: "1,000 inline targets", fs: inline(1000)},
		{name: "7,000 inline targets", fs: inline(7000)},
		{name: "8,000 inline targets", fs: inline(8000), wantWarn: true},
		{name: "Argo CD targets, first admission: count unknown", fs: selected(0)},
		{name: "Argo CD targets, 9,000 selected last time", fs: selected(0), old: selected(9000), wantWarn: true},
		{name: "Argo CD targets, 3,000 selected last time", fs: selected(0), old: selected(3000)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := CeilingWarning(tt.fs, tt.old)
			if !tt.wantWarn {
				require.Empty(t, got)
				return
			}
			require.Len(t, got, 1)
			require.Contains(t, got[0], "spec.targets: a Freight promoted through this FleetStage's")
			require.Contains(t, got[0], fmt.Sprintf("%d KiB object limit", kargo.FreightObjectLimitBytes/1024))
			require.Contains(t, got[0], "split the fleet across Projects")
		})
	}
}
