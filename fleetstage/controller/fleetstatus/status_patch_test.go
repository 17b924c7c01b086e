package fleetstatus

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

func TestFleetStageStatusPatchCarriesOnlyTheStatusChange(t *testing.T) {
	t.Parallel()
	fs := &fleetv1alpha1.FleetStage{}
	fs.Spec.Targets.Sources = []fleetv1alpha1.TargetSource{{Kind: fleetv1alpha1.InlineSource,
		Inline: []fleetv1alpha1.InlineTarget{{Name: "c-1"}, {Name: "c-2"}}}}
	before := &fleetv1alpha1.FleetStageStatus{
		ObservedGeneration: 3,
		CurrentRollout:     "fleet-a",
		Versions:           []fleetv1alpha1.FreightCount{{Freight: "f1", Targets: 2}},
	}
	after := before.DeepCopy()
	after.CurrentRollout = ""
	after.LastRollout = "fleet-a"
	after.Versions = []fleetv1alpha1.FreightCount{{Freight: "f2", Targets: 2}}

	data, err := fleetStageStatusPatch{before: before, after: after}.Data(fs)
	require.NoError(t, err)
	var got map[string]any
	require.NoError(t, json.Unmarshal(data, &got))
	require.Equal(t, map[string]any{"status": map[string]any{
		"currentRollout": nil, // removed: a merge patch says so with null
		"lastRollout":    "fleet-a",
		"versions":       []any{map[string]any{"freight": "f2", "targets": float64(2)}},
	}}, got, "the spec and the unchanged status fields stay out of the patch")

	same, err := fleetStageStatusPatch{before: before, after: before.DeepCopy()}.Data(fs)
	require.NoError(t, err)
	require.JSONEq(t, `{}`, string(same))
}
