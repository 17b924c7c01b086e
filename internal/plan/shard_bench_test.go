package plan

import (
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

// hostileTargets is the fleet size of the hostile-input benchmark.
const hostileTargets = 2000

// hostileValue is 64 KiB that quoting triples: a shard value, team or
// expression result a hostile inventory could hold. shortHostileValue is
// its first 64 bytes: invalid alike, but short.
var (
	hostileValue      = strings.Repeat("\x00\"", 32<<10)
	shortHostileValue = hostileValue[:64]
)

// hostileCase is one way spec.shards (or team scoping) meets a target value.
type hostileCase struct {
	name   string
	shards *fleetv1alpha1.ShardsSpec
	// value sets one target's value (the shard param or label, or the team).
	value func(t *Target, v string)
	// benign is the value of the benign run.
	benign string
	// evaluationFails says the hostile value makes expr-lang fail, which
	// costs about 500 bytes a target whatever the value: its error, the
	// expression snippet, the formatted message. Planning memory then does
	// not grow with the value but may exceed twice the benign plan's.
	evaluationFails bool
}

func setShardParam(t *Target, v string) { t.Params["shard"] = v }
func setShardLabel(t *Target, v string) { t.Labels["shard"] = v }
func setTeamLabel(t *Target, v string)  { t.Labels[fleetv1alpha1.TeamLabel] = v }

// hostileCases cover every way a target value reaches an exclusion message.
var hostileCases = []hostileCase{
	{name: "param", shards: &fleetv1alpha1.ShardsSpec{TargetParam: "shard"}, value: setShardParam, benign: "shard-a"},
	{name: "label", shards: &fleetv1alpha1.ShardsSpec{TargetLabel: "shard"}, value: setShardLabel, benign: "shard-a"},
	{name: "expression", shards: &fleetv1alpha1.ShardsSpec{Expression: `params.shard`}, value: setShardParam, benign: "shard-a"},
	{
		name:   "expression-error",
		shards: &fleetv1alpha1.ShardsSpec{Expression: `"shard-" + string(int(params.shard) % 4)`},
		value:  setShardParam, benign: "1", evaluationFails: true,
	},
	{name: "team", shards: &fleetv1alpha1.ShardsSpec{TargetParam: "shard"}, value: setTeamLabel, benign: "team-1"},
}

// hostileFleet is syntheticFleet(n) with value set on every target the way
// c says.
func hostileFleet(c hostileCase, n int, value string) (*fleetv1alpha1.FleetStageSpec, PlanInput) {
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
		c.value(t, value)
	}
	return spec, in
}

// BenchmarkPlanHostileShards plans 2,000 targets whose shard value (or team)
// is benign or 64 KiB of hostile bytes: exclusion messages must not copy it.
func BenchmarkPlanHostileShards(b *testing.B) {
	for _, c := range hostileCases {
		for _, hostile := range []bool{false, true} {
			name, value := c.name+"/benign", c.benign
			if hostile {
				name, value = c.name+"/hostile", hostileValue
			}
			b.Run(name, func(b *testing.B) {
				spec, in := hostileFleet(c, hostileTargets, value)
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

// planBytes is the memory one Plan call over c's fleet with value
// allocates, after a warm-up call: the least of three calls, since the
// process-wide counter also counts what other goroutines (the runtime, the
// race detector) allocate meanwhile, which only ever adds.
func planBytes(t *testing.T, c hostileCase, value string) uint64 {
	t.Helper()
	spec, in := hostileFleet(c, hostileTargets, value)
	_, err := Plan(spec, in)
	require.NoError(t, err)
	least := uint64(math.MaxUint64)
	for range 3 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		_, err = Plan(spec, in)
		runtime.ReadMemStats(&after)
		require.NoError(t, err)
		least = min(least, after.TotalAlloc-before.TotalAlloc)
	}
	return least
}

// TestPlanHostileShardsMemory keeps the memory of planning 2,000 hostile
// targets independent of the size of their values and within twice the
// memory of 2,000 benign ones (see evaluationFails). It is not parallel: the
// allocation counters are process-wide, and parallel tests start only once
// the sequential ones are done.
func TestPlanHostileShardsMemory(t *testing.T) {
	for _, c := range hostileCases {
		benign := planBytes(t, c, c.benign)
		short := planBytes(t, c, shortHostileValue)
		hostile := planBytes(t, c, hostileValue)
		t.Logf("%s: benign %d B, hostile %d B (%.2fx), with 64-byte values %d B",
			c.name, benign, hostile, float64(hostile)/float64(benign), short)
		// 64 KiB values instead of 64-byte ones would add 128 MB to a plan
		// that quoted them whole.
		require.LessOrEqual(t, hostile, short+short/4, "%s: planning memory must not grow with the values", c.name)
		if !c.evaluationFails {
			require.LessOrEqual(t, hostile, 2*benign, "%s: hostile values must not grow planning memory", c.name)
		}
	}
}
