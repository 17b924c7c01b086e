package plan

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/expr-lang/expr/file"
	"github.com/stretchr/testify/require"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/strutil"
)

// maxTestMessage bounds every message about a target, whatever it quotes.
const maxTestMessage = 512

func TestPlan_boundsMessages(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("\x00\"é", 20<<10)
	manyTeams := TeamSet{}
	for i := range 1000 {
		manyTeams[fmt.Sprintf("team-%04d-%s", i, strings.Repeat("x", 200))] = struct{}{}
	}
	tests := []struct {
		name string
		// spec and teams change the default spec (one catch-all wave).
		spec  func(*fleetv1alpha1.FleetStageSpec)
		teams TeamSet
		// target changes the planned target.
		target     func(*Target)
		wantReason ExclusionReason
		wantPrefix string
	}{
		{
			name:       "shard param",
			spec:       func(s *fleetv1alpha1.FleetStageSpec) { s.Shards = &fleetv1alpha1.ShardsSpec{TargetParam: "shard"} },
			target:     func(t *Target) { t.Params["shard"] = long },
			wantReason: ExclusionInvalidShard,
			wantPrefix: `shard "\x00\"é\x00\"é`,
		},
		{
			name:       "shard label",
			spec:       func(s *fleetv1alpha1.FleetStageSpec) { s.Shards = &fleetv1alpha1.ShardsSpec{TargetLabel: "shard"} },
			target:     func(t *Target) { t.Labels["shard"] = "a" + long },
			wantReason: ExclusionInvalidShard,
			wantPrefix: `shard "a\x00\"é`,
		},
		{
			name: "shard expression result",
			spec: func(s *fleetv1alpha1.FleetStageSpec) {
				s.Shards = &fleetv1alpha1.ShardsSpec{Expression: `params.shard + "-x"`}
			},
			target:     func(t *Target) { t.Params["shard"] = long },
			wantReason: ExclusionInvalidShard,
			wantPrefix: `shard "\x00`,
		},
		{
			name: "shard expression error quoting the value",
			spec: func(s *fleetv1alpha1.FleetStageSpec) {
				s.Shards = &fleetv1alpha1.ShardsSpec{Expression: `string(int(params.shard))`}
			},
			target:     func(t *Target) { t.Params["shard"] = long },
			wantReason: ExclusionInvalidShard,
			wantPrefix: "spec.shards.expression: invalid operation: int(",
		},
		{
			name:       "selection expression error quoting the value",
			spec:       func(s *fleetv1alpha1.FleetStageSpec) { s.Targets.Selector.Expression = `int(params.cells) > 2` },
			target:     func(t *Target) { t.Params["cells"] = long },
			wantReason: ExclusionExpressionError,
			wantPrefix: "spec.targets.selector.expression: invalid operation: int(",
		},
		{
			name:       "team not allowed",
			teams:      TeamSet{"a": {}},
			target:     func(t *Target) { t.Labels[fleetv1alpha1.TeamLabel] = long },
			wantReason: ExclusionTeamNotAllowed,
			wantPrefix: `team "\x00\"é`,
		},
		{
			name:       "team not allowed among many long teams",
			teams:      manyTeams,
			target:     func(t *Target) { t.Labels[fleetv1alpha1.TeamLabel] = "b" },
			wantReason: ExclusionTeamNotAllowed,
			wantPrefix: `team "b" is not among the Project's allowed teams [team-0000-xxx`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			spec := makeSpec(fleetv1alpha1.Wave{Name: "all"})
			if tt.spec != nil {
				tt.spec(spec)
			}
			target := makeTarget("t1")
			target.Labels, target.Params = map[string]string{}, map[string]string{}
			tt.target(&target)
			p, err := Plan(spec, PlanInput{Seed: "s", Candidates: []Target{target}, AllowedTeams: tt.teams})
			require.NoError(t, err)
			require.Len(t, p.Excluded, 1)
			e := p.Excluded[0]
			shown := strutil.Ellipsis(e.Message, 2*maxTestMessage)
			require.Equal(t, tt.wantReason, e.Reason, shown)
			require.LessOrEqual(t, len(e.Message), maxTestMessage, shown)
			require.True(t, strings.HasPrefix(e.Message, tt.wantPrefix), shown)
			require.True(t, utf8.ValidString(e.Message), shown)
		})
	}
}

func TestPlan_boundsEvaluationErrors(t *testing.T) {
	t.Parallel()
	spec := makeSpec(fleetv1alpha1.Wave{Name: "big", Expression: `int(params.cells) > 2`}, fleetv1alpha1.Wave{Name: "rest"})
	target := makeTarget("t1")
	target.Params = map[string]string{"cells": strings.Repeat("9x", 32<<10)}
	p, err := Plan(spec, PlanInput{Seed: "s", Candidates: []Target{target}})
	require.NoError(t, err)
	require.Len(t, p.EvaluationErrors, 1)
	msg := p.EvaluationErrors[0].Message
	shown := strutil.Ellipsis(msg, 2*maxTestMessage)
	require.LessOrEqual(t, len(msg), maxTestMessage, shown)
	require.True(t, strings.HasPrefix(msg, `invalid operation: int("9x9x`), shown)
}

func Test_evaluationError(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 1000)
	tests := []struct {
		name string
		err  error
		want string
	}{
		{name: "plain", err: errors.New("boom\nsecond line"), want: "boom"},
		{name: "long", err: errors.New(long), want: long[:maxEvaluationError-3] + "..."},
		{
			name: "expr-lang error without the snippet",
			err:  &file.Error{Message: "invalid operation: int(" + long + ")", Line: 1, Column: 4, Snippet: "\n | int(x)\n | ....^"},
			want: "invalid operation: int(" + long[:maxEvaluationError-3-len("invalid operation: int(")] + "... (1:5)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, "prefix: "+tt.want, evaluationError("prefix: ", tt.err))
		})
	}
}
