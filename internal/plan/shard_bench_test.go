package plan

import (
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

// hostileTargets is the fleet size of the hostile-input benchmark.
const hostileTargets = 2000

// hostileValue is 64 KiB that quoting triples: a shard value, team or
// expression result a hostile inventory could hold.
var hostileValue = strings.Repeat("\x00\"", 32<<10)

// hostileCase is one way spec.shards (or team scoping) meets a target value.
type hostileCase struct {
	name   string
	shards *fleetv1alpha1.ShardsSpec
	// value sets one target's value (the shard param or label, or the team).
	value func(t *Target, v string)
	// benign is the value of the benign run.
	benign string
}

func setShardParam(t *Target, v string) { t.Params["shard"] = v }
func setShardLabel(t *Target, v string) { t.Labels["shard"] = v }
func setTeamLabel(t *Target, v string)  { t.Labels[fleetv1alpha1.TeamLabel] = v }

// hostileCases cover every way a target value reaches an exclusion message.
var hostileCases = []hostileCase{
	{name: "param", shards: &fleetv1alpha1.ShardsSpec{TargetParam: "shard"}, value: setShardParam, benign: "shard-a"},
	{name: "label", shards: &fleetv1alpha1.ShardsSpec{TargetLabel: "shard"}, value: setShardLabel, benign: "shard-a"},
	{name: "expression", shards: &fleetv1alpha1.ShardsSpec{Expression: `params.shard`}, value: setShardParam, benign: "shard-a"},
	{name: "team", shards: &fleetv1alpha1.ShardsSpec{TargetParam: "shard"}, value: setTeamLabel, benign: "team-1"},
}

// hostileFleet is syntheticFleet(n) with c's value set on every target:
// value for the hostile run, a valid shard (or allowed team) otherwise.
func hostileFleet(c hostileCase, n int, hostile bool) (*fleetv1alpha1.FleetStageSpec, PlanInput) {
	spec := benchSpec()
	spec.Shards = c.shards
	in := PlanInput{
		Seed:         "fleet/prod",
		Candidates:   syntheticFleet(n),
		AllowedTeams: TeamSet{"team-0": {}, "team-1": {}, "team-2": {}, "team-3": {}, "team-4": {}},
	}
	for i := range in.Candidates {
		t := &in.Candidates[i]
		t.Params["shard"] = "shard-a"
		if hostile {
			c.value(t, hostileValue)
		} else {
			c.value(t, c.benign)
		}
	}
	return spec, in
}

// BenchmarkPlanHostileShards plans 2,000 targets whose shard value (or team)
// is benign or 64 KiB of hostile bytes: exclusion messages must not copy it.
func BenchmarkPlanHostileShards(b *testing.B) {
	for _, c := range hostileCases {
		for _, hostile := range []bool{false, true} {
			name := c.name + "/benign"
			if hostile {
				name = c.name + "/hostile"
			}
			b.Run(name, func(b *testing.B) {
				spec, in := hostileFleet(c, hostileTargets, hostile)
				p, err := Plan(spec, in)
				require.NoError(b, err)
				if hostile {
					require.Len(b, p.Excluded, hostileTargets)
				}
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
}

// planBytes is the memory one Plan call over c's fleet allocates, after a
// warm-up call.
func planBytes(t *testing.T, c hostileCase, hostile bool) uint64 {
	t.Helper()
	spec, in := hostileFleet(c, hostileTargets, hostile)
	_, err := Plan(spec, in)
	require.NoError(t, err)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err = Plan(spec, in)
	runtime.ReadMemStats(&after)
	require.NoError(t, err)
	return after.TotalAlloc - before.TotalAlloc
}

// TestPlanHostileShardsMemory keeps planning 2,000 hostile targets within
// twice the memory of 2,000 benign ones. It is not parallel: the allocation
// counters are process-wide, and parallel tests start only once the
// sequential ones are done.
func TestPlanHostileShardsMemory(t *testing.T) {
	for _, c := range hostileCases {
		benign := planBytes(t, c, false)
		hostile := planBytes(t, c, true)
		t.Logf("%s: benign %d B, hostile %d B", c.name, benign, hostile)
		require.LessOrEqual(t, hostile, 2*benign, "%s: hostile values must not grow planning memory", c.name)
	}
}
