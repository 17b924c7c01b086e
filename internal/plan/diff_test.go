package plan

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

func TestDiff(t *testing.T) {
	t.Parallel()
	spec := makeSpec(
		fleetv1alpha1.Wave{Name: "gold", Selector: selectorOf("tier=gold")},
		fleetv1alpha1.Wave{Name: "silver", Selector: selectorOf("tier=silver")},
	)
	before, err := Plan(spec, PlanInput{Candidates: []Target{
		makeTarget("a", "tier=gold"), makeTarget("b", "tier=gold"), makeTarget("c", "tier=silver"),
		makeTarget("d", "tier=bronze"), makeTarget("gone", "tier=gold"),
	}})
	require.NoError(t, err)
	after, err := Plan(spec, PlanInput{Candidates: []Target{
		makeTarget("a", "tier=gold"), makeTarget("b", "tier=silver"), makeTarget("c", "tier=bronze"),
		makeTarget("d", "tier=gold"), makeTarget("new", "tier=silver"),
	}})
	require.NoError(t, err)

	d := Diff(before, after)
	require.Equal(t, PlanDiff{
		Moved: []TargetMove{
			{ID: "b", Name: "b", From: "gold", To: "silver"},
			{ID: "c", Name: "c", From: "silver", To: UnassignedPlacement},
			{ID: "d", Name: "d", From: UnassignedPlacement, To: "gold"},
		},
		Joined: []TargetPlacement{{ID: "new", Name: "new", Placement: "silver"}},
		Left:   []TargetPlacement{{ID: "gone", Name: "gone", Placement: "gold"}},
	}, d)
	require.False(t, d.Empty())

	var table bytes.Buffer
	require.NoError(t, RenderDiffTable(&table, &d))
	require.Equal(t, `3 moved, 1 joined, 1 left

CHANGE  TARGET  FROM          TO
moved   b       gold          silver
moved   c       silver        (unassigned)
moved   d       (unassigned)  gold
joined  new     -             silver
left    gone    gold          -
`, table.String())

	var js bytes.Buffer
	require.NoError(t, RenderDiffJSON(&js, &d))
	var back PlanDiff
	require.NoError(t, json.Unmarshal(js.Bytes(), &back))
	require.Equal(t, d, back)

	same := Diff(before, before)
	require.True(t, same.Empty())
	var none bytes.Buffer
	require.NoError(t, RenderDiffTable(&none, &same))
	require.Equal(t, "No change: every target keeps its wave.\n", none.String())
}
