package plan

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

// scheduleBench is the state of a large wave half-way through a rollout:
// half of its members done, some in flight in this rollout and in another,
// three windows and two constraints.
type scheduleBench struct {
	plan   *WavePlan
	policy *CompiledPolicy
	idx    *ScheduleIndex
	req    ScheduleRequest
}

func newScheduleBench(b *testing.B, n int, now time.Time) scheduleBench {
	b.Helper()
	spec := makeSpec(fleetv1alpha1.Wave{Name: "general", MaxConcurrent: amountOf("50")})
	spec.Policy.Windows = []fleetv1alpha1.ChangeWindow{
		window("business-hours", fleetv1alpha1.WindowAllow, "0 9 * * 1-5", 8*time.Hour, "Europe/Berlin"),
		window("lunch", fleetv1alpha1.WindowDeny, "0 12 * * *", time.Hour, "Europe/Berlin"),
		window("critical-nights", fleetv1alpha1.WindowAllow, "0 22 * * *", 4*time.Hour, "America/New_York"),
	}
	spec.Policy.Windows[2].Selector = selectorOf("tier=critical")
	spec.Policy.Constraints = []fleetv1alpha1.ConcurrencyConstraint{
		{Name: "one-critical-region", LabelKey: "region", MaxInFlight: 1, Selector: selectorOf("tier=critical")},
		{Name: "per-region", LabelKey: "region", MaxInFlight: 20},
	}
	planner := mustCompile(b, spec)
	p := planner.Plan(PlanInput{Seed: "fleet/prod", Candidates: syntheticFleet(n)})
	members := p.Waves[0].Members
	done := make([]bool, len(members))
	for i := range members[:len(members)/2] {
		done[i] = true
	}
	var inFlight []InFlightTarget
	for i, m := range members[len(members)/2:] {
		if i%3 == 0 && len(inFlight) < 30 {
			rollout := "r1"
			if i%2 == 0 {
				rollout = "r0"
			}
			inFlight = append(inFlight, InFlightTarget{Target: m, Rollout: rollout})
		}
	}
	return scheduleBench{
		plan:   p,
		policy: planner.Policy(),
		idx:    NewScheduleIndex(p, planner.Policy()),
		req:    ScheduleRequest{Wave: "general", Rollout: "r1", InFlight: inFlight, Done: done, Now: now},
	}
}

// BenchmarkSchedule measures the costliest decision: outside the allow
// windows every pending member is examined and the next opening computed.
func BenchmarkSchedule(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("targets=%d", n), func(b *testing.B) {
			// Saturday: the business-hours window is closed.
			s := newScheduleBench(b, n, time.Date(2026, 3, 7, 10, 0, 0, 0, time.UTC))
			d := Schedule(s.idx, s.req)
			require.Equal(b, WaitWindow, d.Waiting, d.Message)
			require.False(b, d.RetryAt.IsZero())
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				Schedule(s.idx, s.req)
			}
		})
	}
}

// BenchmarkScheduleStart measures the common decision: inside the windows,
// free slots are filled after skipping the members already done.
func BenchmarkScheduleStart(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("targets=%d", n), func(b *testing.B) {
			// Monday 10:00 UTC: business hours in Berlin, not lunch.
			s := newScheduleBench(b, n, time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC))
			d := Schedule(s.idx, s.req)
			require.NotEmpty(b, d.Start, d.Message)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				Schedule(s.idx, s.req)
			}
		})
	}
}

// BenchmarkNewScheduleIndex measures building the index, done once per plan,
// with the windows and constraints of BenchmarkSchedule.
func BenchmarkNewScheduleIndex(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("targets=%d", n), func(b *testing.B) {
			s := newScheduleBench(b, n, time.Time{})
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				NewScheduleIndex(s.plan, s.policy)
			}
		})
	}
}
