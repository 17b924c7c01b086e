package plan

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

// shardFleet is n targets spread round-robin over shards, labelled with it.
func shardFleet(n int, shards ...string) []Target {
	out := make([]Target, n)
	for i := range out {
		out[i] = makeTarget(fmt.Sprintf("t%05d", i), "shard="+shards[i%len(shards)])
	}
	return out
}

// shardIndex plans fleet in one wave under spec.shards.
func shardIndex(t testing.TB, fleet []Target, maxConcurrent string, shards *fleetv1alpha1.ShardsSpec) (*WavePlan, *ScheduleIndex) {
	t.Helper()
	spec := makeSpec(fleetv1alpha1.Wave{Name: "all", MaxConcurrent: amountOf(maxConcurrent)})
	spec.Shards = shards
	planner := mustCompile(t, spec)
	p := planner.Plan(PlanInput{Seed: "s", Candidates: fleet})
	return p, NewScheduleIndex(p, planner.Policy())
}

func TestScheduleShardLimits(t *testing.T) {
	t.Parallel()
	fleet := shardFleet(12, "eu", "us", "")
	byShard := func(p *WavePlan, ids []*Target) map[string]int {
		out := map[string]int{}
		for _, t := range ids {
			out[t.Shard]++
		}
		return out
	}
	tests := []struct {
		name          string
		shards        *fleetv1alpha1.ShardsSpec
		maxConcurrent string
		inFlight      map[string]int // per shard, rollout r1
		otherInFlight map[string]int // per shard, rollout r0
		wantStarted   map[string]int
		wantWaiting   WaitReason
		wantMessage   string
	}{
		{
			name:          "no limit: the wave's maxConcurrent alone",
			shards:        &fleetv1alpha1.ShardsSpec{TargetLabel: "shard"},
			maxConcurrent: "6",
			wantStarted:   nil, // any 6
		},
		{
			name:          "each shard gets at most its limit",
			shards:        &fleetv1alpha1.ShardsSpec{TargetLabel: "shard", MaxConcurrent: int32Ptr(1)},
			maxConcurrent: "10",
			wantStarted:   map[string]int{"eu": 1, "us": 1, "": 1},
			wantWaiting:   WaitShardLimit,
		},
		{
			name: "per-shard overrides, the default shard included",
			shards: &fleetv1alpha1.ShardsSpec{TargetLabel: "shard", MaxConcurrent: int32Ptr(1),
				Limits: []fleetv1alpha1.ShardLimit{{Shard: "eu", MaxConcurrent: 3}, {Shard: "", MaxConcurrent: 2}}},
			maxConcurrent: "10",
			wantStarted:   map[string]int{"eu": 3, "us": 1, "": 2},
			wantWaiting:   WaitShardLimit,
		},
		{
			name:          "only listed shards are limited",
			shards:        &fleetv1alpha1.ShardsSpec{TargetLabel: "shard", Limits: []fleetv1alpha1.ShardLimit{{Shard: "us", MaxConcurrent: 1}}},
			maxConcurrent: "100%",
			wantStarted:   map[string]int{"eu": 4, "us": 1, "": 4},
			wantWaiting:   WaitShardLimit,
		},
		{
			name:          "a busy shard does not hold back the others",
			shards:        &fleetv1alpha1.ShardsSpec{TargetLabel: "shard", MaxConcurrent: int32Ptr(2)},
			maxConcurrent: "6",
			inFlight:      map[string]int{"eu": 2},
			wantStarted:   map[string]int{"us": 2, "": 2},
			wantWaiting:   "", // every free slot was filled
		},
		{
			name:          "other rollouts' Promotions count on their shard",
			shards:        &fleetv1alpha1.ShardsSpec{TargetLabel: "shard", MaxConcurrent: int32Ptr(2)},
			maxConcurrent: "10",
			otherInFlight: map[string]int{"eu": 2, "us": 1},
			wantStarted:   map[string]int{"us": 1, "": 2},
			wantWaiting:   WaitShardLimit,
		},
		{
			name:          "every shard full",
			shards:        &fleetv1alpha1.ShardsSpec{TargetLabel: "shard", MaxConcurrent: int32Ptr(1)},
			maxConcurrent: "10",
			inFlight:      map[string]int{"eu": 1, "us": 1, "": 1},
			wantStarted:   map[string]int{},
			wantWaiting:   WaitShardLimit,
			wantMessage:   "targets wait for their shard: shard",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, idx := shardIndex(t, fleet, tt.maxConcurrent, tt.shards)
			req := ScheduleRequest{Wave: "all", Rollout: "r1", Now: time.Unix(0, 0)}
			for rollout, want := range map[string]map[string]int{"r1": tt.inFlight, "r0": tt.otherInFlight} {
				left := map[string]int{}
				for k, v := range want {
					left[k] = v
				}
				for _, m := range p.Waves[0].Members {
					if left[m.Shard] > 0 {
						left[m.Shard]--
						req.InFlight = append(req.InFlight, InFlightTarget{Target: m, Rollout: rollout})
					}
				}
			}
			d := Schedule(idx, req)
			if tt.wantStarted == nil {
				mc, _ := parsePositiveAmount(*amountOf(tt.maxConcurrent))
				require.Len(t, d.Start, mc.roundUp(len(fleet)))
				return
			}
			require.Equal(t, tt.wantStarted, nonZero(byShard(p, d.Start)))
			require.Equal(t, tt.wantWaiting, d.Waiting, d.Message)
			require.Contains(t, d.Message, tt.wantMessage)
			if tt.wantWaiting == WaitShardLimit {
				require.Positive(t, d.BlockedByShard)
			}
		})
	}
}

func nonZero(m map[string]int) map[string]int {
	for k, v := range m {
		if v == 0 {
			delete(m, k)
		}
	}
	return m
}

// FuzzScheduleShardLimits checks the properties of per-shard limits on any
// spread of targets, limits and in-flight Promotions: a shard never goes
// over its limit through Schedule, the wave's maxConcurrent holds, and the
// scheduler is work-conserving: a member left pending has a full shard (or
// the wave's slots are all taken).
func FuzzScheduleShardLimits(f *testing.F) {
	f.Add(uint8(30), uint8(3), uint8(2), uint8(10), uint16(0x0f0f), uint8(1))
	f.Add(uint8(200), uint8(5), uint8(1), uint8(50), uint16(0x1234), uint8(3))
	f.Add(uint8(7), uint8(1), uint8(7), uint8(7), uint16(0), uint8(0))
	f.Fuzz(func(t *testing.T, n, nShards, limit, maxConcurrent uint8, inFlightBits uint16, euLimit uint8) {
		if n == 0 || nShards == 0 || limit == 0 || maxConcurrent == 0 {
			return
		}
		shards := make([]string, int(nShards%8)+1)
		for i := range shards {
			shards[i] = fmt.Sprintf("s%d", i)
		}
		shards[0] = ""
		spec := &fleetv1alpha1.ShardsSpec{TargetLabel: "shard", MaxConcurrent: int32Ptr(int32(limit%20) + 1)}
		if euLimit > 0 && len(shards) > 1 {
			spec.Limits = []fleetv1alpha1.ShardLimit{{Shard: shards[1], MaxConcurrent: int32(euLimit%5) + 1}}
		}
		p, idx := shardIndex(t, shardFleet(int(n), shards...), fmt.Sprint(int(maxConcurrent%60)+1), spec)
		limits, errs := CompileShardLimits(spec, nil)
		require.Empty(t, errs)
		req := ScheduleRequest{Wave: "all", Rollout: "r1", Now: time.Unix(0, 0)}
		inFlight := map[string]int{}
		members := p.Waves[0].Members
		for i := range members {
			if inFlightBits&(1<<(i%16)) != 0 && i%3 == 0 {
				limit, _ := limits.Limit(members[i].Shard)
				if inFlight[members[i].Shard] < limit {
					inFlight[members[i].Shard]++
					req.InFlight = append(req.InFlight, InFlightTarget{Target: members[i], Rollout: "r1"})
				}
			}
		}
		d := Schedule(idx, req)
		started := map[string]bool{}
		after := map[string]int{}
		for k, v := range inFlight {
			after[k] = v
		}
		for _, t := range d.Start {
			started[t.ID] = true
			after[t.Shard]++
		}
		for shard, c := range after {
			limit, _ := limits.Limit(shard)
			require.LessOrEqual(t, c, limit, "shard %q over its limit", shard)
		}
		slots := p.Waves[0].MaxConcurrent - len(req.InFlight)
		require.LessOrEqual(t, len(d.Start), max(0, slots))
		if len(d.Start) == max(0, slots) {
			return
		}
		busy := map[string]bool{}
		for _, f := range req.InFlight {
			busy[f.Target.ID] = true
		}
		for _, m := range members {
			if started[m.ID] || busy[m.ID] {
				continue
			}
			limit, _ := limits.Limit(m.Shard)
			require.GreaterOrEqual(t, after[m.Shard], limit, "member %s on shard %q left pending with room", m.ID, m.Shard)
		}
	})
}

// BenchmarkScheduleShards measures a start decision with a per-shard
// limit on six shards, every shard but one full.
func BenchmarkScheduleShards(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("targets=%d", n), func(b *testing.B) {
			shards := []string{"", "eu", "us", "ap", "sa", "af"}
			p, idx := shardIndex(b, shardFleet(n, shards...), "500",
				&fleetv1alpha1.ShardsSpec{TargetLabel: "shard", MaxConcurrent: int32Ptr(20)})
			req := ScheduleRequest{Wave: "all", Rollout: "r1", Now: time.Unix(0, 0)}
			full := map[string]int{}
			for _, m := range p.Waves[0].Members {
				if m.Shard != "af" && full[m.Shard] < 20 {
					full[m.Shard]++
					req.InFlight = append(req.InFlight, InFlightTarget{Target: m, Rollout: "r1"})
				}
			}
			d := Schedule(idx, req)
			require.NotEmpty(b, d.Start)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				Schedule(idx, req)
			}
		})
	}
}
