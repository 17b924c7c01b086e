package plan

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

// benchSizes are the fleet sizes every planner benchmark runs at.
var benchSizes = []int{100, 1000, 10000}

// benchSpec is a realistic FleetStage: a glob and an expression in the
// selection, team scoping, four waves mixing expressions, selectors, numeric
// and percent counts.
func benchSpec() *fleetv1alpha1.FleetStageSpec {
	spec := makeSpec(realisticWaves()...)
	spec.Targets.Selector = fleetv1alpha1.TargetSelector{
		LabelGlobs: []fleetv1alpha1.LabelGlobSelector{{MatchGlobs: map[string]string{"region": "*-*"}}},
		Expression: `labels.env == "prod" && params.server != ""`,
	}
	spec.Policy.MaxFailures = amountOf("5%")
	return spec
}

// BenchmarkPlan measures Plan (compile included) end to end.
func BenchmarkPlan(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("targets=%d", n), func(b *testing.B) {
			spec := benchSpec()
			in := PlanInput{
				Seed:         "fleet/prod",
				Candidates:   syntheticFleet(n),
				AllowedTeams: TeamSet{"team-0": {}, "team-1": {}, "team-2": {}, "team-3": {}},
			}
			p, err := Plan(spec, in)
			require.NoError(b, err)
			require.Positive(b, p.Members())
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := Plan(spec, in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
