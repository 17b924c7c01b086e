package rollout

import (
	"testing"

	"github.com/stretchr/testify/require"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

func TestStageRoleIn(t *testing.T) {
	t.Parallel()
	waves := []fleetv1alpha1.Wave{{Name: "pilot", Count: testutil.Int(1)}, {Name: "rest"}}
	fleets := []fleetv1alpha1.FleetStage{
		*testutil.MakeFleetStage("shop", "prod").FromStage("prod-template").Waves(waves...).Obj(),
		*testutil.MakeFleetStage("shop", "edge").FromStage("edge-template").Waves(waves...).Obj(),
	}
	tests := []struct {
		stage     string
		wantFleet string
		wantRole  FleetStageRole
	}{
		{stage: "prod-template", wantFleet: "prod", wantRole: StageTemplate},
		{stage: "prod-pilot", wantFleet: "prod", wantRole: StageWave},
		{stage: "edge-rest", wantFleet: "edge", wantRole: StageWave},
		{stage: "prod.eu-west-1-c100", wantFleet: "prod", wantRole: StageTarget},
		{stage: "edge.t1", wantFleet: "edge", wantRole: StageTarget},
		{stage: "prod-canary", wantRole: StageNotInFleet},
		{stage: "production.t1", wantRole: StageNotInFleet},
		{stage: "staging", wantRole: StageNotInFleet},
	}
	for _, tc := range tests {
		t.Run(tc.stage, func(t *testing.T) {
			t.Parallel()
			fs, role := StageRoleIn(fleets, tc.stage)
			require.Equal(t, tc.wantRole, role)
			if tc.wantFleet == "" {
				require.Nil(t, fs)
				return
			}
			require.Equal(t, tc.wantFleet, fs.Name)
		})
	}
}
