package plan

import (
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

func TestPlan_selection(t *testing.T) {
	t.Parallel()
	team := fleetv1alpha1.TeamLabel
	candidates := []Target{
		makeTarget("us-1", "region=us-east", "tier=gold", team+"=payments"),
		makeTarget("us-2", "region=us-west", "tier=bronze", team+"=search"),
		makeTarget("eu-1", "region=eu-central", "tier=gold", team+"=payments"),
		makeTarget("ap-1", "region=ap-south", "env=staging"),
		makeTarget("frozen", "region=us-east", fleetv1alpha1.FrozenLabel+"=true", team+"=payments"),
		makeTarget("held", "region=us-east", fleetv1alpha1.ComplianceHoldLabel+"=", team+"=payments"),
	}
	tests := []struct {
		name            string
		selector        fleetv1alpha1.TargetSelector
		excludeLabels   []string
		teams           TeamSet
		candidates      []Target
		wantSelected    []string
		wantExcluded    map[string]ExclusionReason
		wantNotSelected int
		wantCandidates  int
	}{
		{
			name:         "empty selector selects all but default exclusions",
			wantSelected: []string{"ap-1", "eu-1", "us-1", "us-2"},
			wantExcluded: map[string]ExclusionReason{"frozen": ExclusionLabel, "held": ExclusionLabel},
		},
		{
			name: "label selectors are OR-ed",
			selector: fleetv1alpha1.TargetSelector{LabelSelectors: []metav1.LabelSelector{
				*selectorOf("region=us-west"), *selectorOf("region=eu-central"),
			}},
			wantSelected:    []string{"eu-1", "us-2"},
			wantNotSelected: 4,
		},
		{
			name: "globs match values and are OR-ed with selectors",
			selector: fleetv1alpha1.TargetSelector{
				LabelSelectors: []metav1.LabelSelector{*selectorOf("env=staging")},
				LabelGlobs: []fleetv1alpha1.LabelGlobSelector{
					{MatchGlobs: map[string]string{"region": "us-*", "tier": "g*"}},
					{MatchGlobs: map[string]string{"region": "eu-?entral"}},
				},
			},
			wantSelected:    []string{"ap-1", "eu-1", "us-1"},
			wantExcluded:    map[string]ExclusionReason{},
			wantNotSelected: 3,
		},
		{
			name: "a glob never matches a missing label",
			selector: fleetv1alpha1.TargetSelector{LabelGlobs: []fleetv1alpha1.LabelGlobSelector{
				{MatchGlobs: map[string]string{"env": "*"}},
			}},
			wantSelected:    []string{"ap-1"},
			wantNotSelected: 5,
		},
		{
			name: "expression is AND-ed with labels",
			selector: fleetv1alpha1.TargetSelector{
				LabelGlobs: []fleetv1alpha1.LabelGlobSelector{{MatchGlobs: map[string]string{"region": "us-*"}}},
				Expression: `labels.tier == "gold" || name == "frozen"`,
			},
			wantSelected:    []string{"us-1"},
			wantExcluded:    map[string]ExclusionReason{"frozen": ExclusionLabel},
			wantNotSelected: 4,
		},
		{
			name:         "expression errors exclude with a reason",
			selector:     fleetv1alpha1.TargetSelector{Expression: `int(labels.tier) > 0 || labels.env == "staging"`},
			candidates:   []Target{makeTarget("a", "tier=gold"), makeTarget("b", "tier=1"), makeTarget("c", "tier=0")},
			wantSelected: []string{"b"},
			wantExcluded: map[string]ExclusionReason{
				"a": ExclusionExpressionError,
			},
			wantNotSelected: 1,
		},
		{
			name:          "custom exclusion labels replace the defaults",
			excludeLabels: []string{"tier"},
			wantSelected:  []string{"ap-1", "frozen", "held"},
			wantExcluded: map[string]ExclusionReason{
				"us-1": ExclusionLabel, "us-2": ExclusionLabel, "eu-1": ExclusionLabel,
			},
		},
		{
			name:         "team scoping",
			teams:        TeamSet{"payments": {}},
			wantSelected: []string{"eu-1", "us-1"},
			wantExcluded: map[string]ExclusionReason{
				"us-2": ExclusionTeamNotAllowed, "ap-1": ExclusionTeamLabelMissing,
				"frozen": ExclusionLabel, "held": ExclusionLabel,
			},
		},
		{
			name:         "empty team set allows nothing",
			teams:        TeamSet{},
			candidates:   []Target{makeTarget("a", team+"=x"), makeTarget("b", team+"=")},
			wantSelected: []string{},
			wantExcluded: map[string]ExclusionReason{"a": ExclusionTeamNotAllowed, "b": ExclusionTeamLabelMissing},
		},
		{
			name: "duplicates",
			candidates: []Target{
				makeTarget("same", "a=1"), makeTarget("same", "a=1"), // one object through two sources
				makeTarget("clash", "a=1"), makeTarget("clash", "a=2"), makeTarget("clash", "a=3"),
				{Name: "no-id"},
			},
			wantSelected: []string{"same"},
			wantExcluded: map[string]ExclusionReason{
				"clash": ExclusionDuplicateTarget, "": ExclusionInvalidTarget,
			},
			wantCandidates: 3,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			spec := makeSpec()
			spec.Targets.Selector = tt.selector
			spec.Targets.ExcludeLabels = tt.excludeLabels
			in := PlanInput{Seed: "ns/fleet", Candidates: candidates, AllowedTeams: tt.teams}
			if tt.candidates != nil {
				in.Candidates = tt.candidates
			}
			p, err := Plan(spec, in)
			require.NoError(t, err)

			selected := append([]string{}, targetIDs(p.Waves[0].Members)...)
			require.ElementsMatch(t, tt.wantSelected, selected)
			if tt.wantExcluded != nil {
				got := map[string]ExclusionReason{}
				for _, e := range p.Excluded {
					got[e.Target.ID] = e.Reason
					require.NotEmpty(t, e.Message)
				}
				require.Equal(t, tt.wantExcluded, got)
			}
			require.Equal(t, tt.wantNotSelected, p.NotSelected)
			wantCandidates := tt.wantCandidates
			if wantCandidates == 0 {
				wantCandidates = len(in.Candidates)
			}
			require.Equal(t, wantCandidates, p.Candidates)
			require.Equal(t, p.Candidates, p.Selected()+len(p.Excluded)+p.NotSelected, "every candidate is accounted for")
		})
	}
}

func TestPlan_duplicateMessage(t *testing.T) {
	t.Parallel()
	a := makeTarget("x", "a=1")
	b := makeTarget("x", "a=2")
	b.Source = "ClusterProfile"
	p, err := Plan(makeSpec(), PlanInput{Candidates: []Target{b, a}})
	require.NoError(t, err)
	require.Len(t, p.Excluded, 1)
	require.Equal(t, "ClusterProfile", p.Excluded[0].Target.Source, "representative is the smallest by source")
	require.Contains(t, p.Excluded[0].Message, "sources: ClusterProfile, Inline")
}
