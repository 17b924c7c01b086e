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

func TestVersionsMoved(t *testing.T) {
	t.Parallel()
	fc := func(pairs ...any) []fleetv1alpha1.FreightCount {
		var out []fleetv1alpha1.FreightCount
		for i := 0; i < len(pairs); i += 2 {
			out = append(out, fleetv1alpha1.FreightCount{Freight: pairs[i].(string), Targets: int32(pairs[i+1].(int))})
		}
		return out
	}
	require.Equal(t, 0, VersionsMoved(fc("f1", 10), fc("f1", 10)))
	require.Equal(t, 3, VersionsMoved(fc("f1", 10), fc("f1", 7, "f2", 3)))
	require.Equal(t, 7, VersionsMoved(fc("f1", 7, "f2", 3), fc("f2", 10)), "the targets that left f1 for f2")
	require.Equal(t, 2, VersionsMoved(nil, fc(NoFreight, 2)), "new targets count as moved")
}
