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
		Waves:  []WaveChange{},
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

func TestDiff_waves(t *testing.T) {
	t.Parallel()
	targets := []Target{makeTarget("a", "tier=gold"), makeTarget("b", "tier=gold"), makeTarget("c", "tier=silver"),
		makeTarget("d", "tier=silver")}
	gold := fleetv1alpha1.Wave{Name: "gold", Selector: selectorOf("tier=gold")}
	silver := fleetv1alpha1.Wave{Name: "silver", Selector: selectorOf("tier=silver")}
	rest := fleetv1alpha1.Wave{Name: "rest"}
	strictGold := gold
	strictGold.MaxFailures = amountOf("1")
	strictGold.Approval = fleetv1alpha1.ApprovalRequired

	tests := []struct {
		name       string
		before     []fleetv1alpha1.Wave
		after      []fleetv1alpha1.Wave
		wantWaves  []WaveChange
		wantMoved  int
		wantJoined int
	}{
		{
			name:      "same waves: nothing",
			before:    []fleetv1alpha1.Wave{gold, silver},
			after:     []fleetv1alpha1.Wave{gold, silver},
			wantWaves: []WaveChange{},
		},
		{
			name:   "settings resolved differently",
			before: []fleetv1alpha1.Wave{gold, silver},
			after:  []fleetv1alpha1.Wave{strictGold, silver},
			wantWaves: []WaveChange{{Name: "gold", Change: WaveChanged, MembersBefore: 2, MembersAfter: 2,
				Settings: []SettingChange{
					{Field: "maxFailures", From: "0", To: "1"},
					{Field: "approval", From: "None", To: string(fleetv1alpha1.ApprovalRequired)},
				}}},
		},
		{
			name:   "a wave added takes targets from another; a wave removed",
			before: []fleetv1alpha1.Wave{gold, rest},
			after:  []fleetv1alpha1.Wave{gold, silver},
			wantWaves: []WaveChange{
				{Name: "silver", Change: WaveAdded, MembersAfter: 2},
				{Name: "rest", Change: WaveRemoved, MembersBefore: 2},
			},
			wantMoved: 2,
		},
		{
			name:      "a catch-all wave added picks up unassigned targets",
			before:    []fleetv1alpha1.Wave{gold},
			after:     []fleetv1alpha1.Wave{gold, rest},
			wantWaves: []WaveChange{{Name: "rest", Change: WaveAdded, MembersAfter: 2}},
			wantMoved: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			before, err := Plan(makeSpec(tt.before...), PlanInput{Seed: "shop/prod", Candidates: targets})
			require.NoError(t, err)
			after, err := Plan(makeSpec(tt.after...), PlanInput{Seed: "shop/prod", Candidates: targets})
			require.NoError(t, err)
			d := Diff(before, after)
			require.Equal(t, tt.wantWaves, d.Waves)
			require.Len(t, d.Moved, tt.wantMoved)
			require.Len(t, d.Joined, tt.wantJoined)
			require.Equal(t, len(tt.wantWaves) == 0 && tt.wantMoved == 0, d.Empty())
		})
	}
}

func TestRenderDiffTable_waves(t *testing.T) {
	t.Parallel()
	d := PlanDiff{
		Waves: []WaveChange{
			{Name: "canary", Change: WaveChanged, MembersBefore: 20, MembersAfter: 20,
				Settings: []SettingChange{{Field: "maxFailures", From: "2", To: "3"}, {Field: "soak", From: "0s", To: "15m"}}},
			{Name: "edge", Change: WaveAdded, MembersAfter: 4},
		},
		Moved: []TargetMove{{ID: "e1", Name: "e1", From: "general", To: "edge"}},
	}
	var out bytes.Buffer
	require.NoError(t, RenderDiffTable(&out, &d))
	require.Equal(t, `WAVE    CHANGE   MEMBERS   SETTINGS
canary  changed  20 -> 20  maxFailures 2 -> 3, soak 0s -> 15m
edge    added    4         -

1 moved, 0 joined, 0 left

CHANGE  TARGET  FROM     TO
moved   e1      general  edge
`, out.String())

	settingsOnly := PlanDiff{Waves: d.Waves[:1]}
	out.Reset()
	require.NoError(t, RenderDiffTable(&out, &settingsOnly))
	require.Contains(t, out.String(), "\nEvery target keeps its wave.\n")
}
