package plan

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

func TestSchedule(t *testing.T) {
	t.Parallel()
	// One wave "all" of six targets, in hash order; tests refer to members by
	// position so they do not depend on the hash values.
	fleet := []Target{
		makeTarget("a", "region=us", "tier=critical"), makeTarget("b", "region=us", "tier=gold"),
		makeTarget("c", "region=eu", "tier=critical"), makeTarget("d", "region=eu", "tier=gold"),
		makeTarget("e", "region=ap", "tier=critical"), makeTarget("f"),
	}
	spec := makeSpec(fleetv1alpha1.Wave{Name: "all", MaxConcurrent: amountOf("2")})
	plan, err := Plan(spec, PlanInput{Seed: "s", Candidates: fleet})
	require.NoError(t, err)
	order := targetIDs(plan.Waves[0].Members)
	byID := map[string]Target{}
	for _, m := range plan.Waves[0].Members {
		byID[m.ID] = m
	}
	// firstDone marks the first n members, in plan order, done.
	firstDone := func(n int) []bool {
		done := make([]bool, len(order))
		for i := range n {
			done[i] = true
		}
		return done
	}
	inFlight := func(rollout string, ids ...string) []InFlightTarget {
		out := make([]InFlightTarget, len(ids))
		for i, id := range ids {
			out[i] = InFlightTarget{Target: byID[id], Rollout: rollout}
		}
		return out
	}
	monday10 := at("2026-03-02T10:00:00Z")
	saturday := at("2026-03-07T10:00:00Z")
	business := window("business-hours", fleetv1alpha1.WindowAllow, "0 9 * * 1-5", 8*time.Hour, "Europe/Berlin")
	criticalOnly := business
	criticalOnly.Selector = selectorOf("tier=critical")
	oneRegion := fleetv1alpha1.ConcurrencyConstraint{Name: "one-per-region", LabelKey: "region", MaxInFlight: 1}
	oneCriticalRegion := oneRegion
	oneCriticalRegion.Selector = selectorOf("tier=critical")

	tests := []struct {
		name        string
		windows     []fleetv1alpha1.ChangeWindow
		constraints []fleetv1alpha1.ConcurrencyConstraint
		req         ScheduleRequest
		wantStart   []string
		wantWaiting WaitReason
		wantRetryAt time.Time
		wantMessage string
	}{
		{
			name:      "starts maxConcurrent targets in promotion order",
			req:       ScheduleRequest{Wave: "all", Rollout: "r1", Now: monday10},
			wantStart: order[:2],
		},
		{
			name:      "skips done and in-flight members; own in-flight ones use slots",
			req:       ScheduleRequest{Wave: "all", Rollout: "r1", Now: monday10, Done: firstDone(1), InFlight: inFlight("r1", order[1])},
			wantStart: order[2:3],
		},
		{
			name:      "members in flight for another rollout are busy and use no slot",
			req:       ScheduleRequest{Wave: "all", Rollout: "r1", Now: monday10, InFlight: inFlight("r0", order[0])},
			wantStart: order[1:3],
		},
		{
			name:        "maxConcurrent reached",
			req:         ScheduleRequest{Wave: "all", Rollout: "r1", Now: monday10, InFlight: inFlight("r1", order[4], order[5])},
			wantWaiting: WaitMaxConcurrent,
		},
		{
			name:      "rollback concurrency overrides the wave's",
			req:       ScheduleRequest{Wave: "all", Rollout: "r1", Now: monday10, MaxConcurrent: 4},
			wantStart: order[:4],
		},
		{
			name:        "paused",
			req:         ScheduleRequest{Wave: "all", Rollout: "r1", Now: monday10, Paused: true},
			wantWaiting: WaitPaused,
		},
		{
			name:        "unknown wave",
			req:         ScheduleRequest{Wave: "nope", Now: monday10},
			wantWaiting: WaitUnknownWave,
		},
		{
			name:        "every member done",
			req:         ScheduleRequest{Wave: "all", Rollout: "r1", Now: monday10, Done: firstDone(len(order))},
			wantWaiting: WaitWaveDone,
		},
		{
			name: "the last members are in flight",
			req: ScheduleRequest{Wave: "all", Rollout: "r1", Now: monday10, Done: firstDone(5),
				InFlight: inFlight("r1", order[5])},
			wantWaiting: WaitInFlight,
		},
		{
			name: "only members busy elsewhere remain",
			req: ScheduleRequest{Wave: "all", Rollout: "r1", Now: monday10, Done: firstDone(5),
				InFlight: inFlight("r0", order[5])},
			wantWaiting: WaitTargetBusy,
		},
		{
			name:        "outside the allow window: wait until it opens",
			windows:     []fleetv1alpha1.ChangeWindow{business},
			req:         ScheduleRequest{Wave: "all", Rollout: "r1", Now: saturday},
			wantWaiting: WaitWindow,
			wantRetryAt: at("2026-03-09T08:00:00Z"),
			wantMessage: "6 targets wait for a change window (no allow window open: business-hours); next opening 2026-03-09T08:00:00Z",
		},
		{
			name:      "inside the allow window",
			windows:   []fleetv1alpha1.ChangeWindow{business},
			req:       ScheduleRequest{Wave: "all", Rollout: "r1", Now: monday10},
			wantStart: order[:2],
		},
		{
			name:        "a window for some targets holds only those",
			windows:     []fleetv1alpha1.ChangeWindow{criticalOnly},
			req:         ScheduleRequest{Wave: "all", Rollout: "r1", Now: saturday, MaxConcurrent: 10},
			wantStart:   filter(order, byID, func(t Target) bool { return t.Labels["tier"] != "critical" }),
			wantWaiting: WaitWindow,
			wantRetryAt: at("2026-03-09T08:00:00Z"),
		},
		{
			name:        "constraint counts in-flight targets of other rollouts, even outside the plan",
			constraints: []fleetv1alpha1.ConcurrencyConstraint{oneRegion},
			req: ScheduleRequest{Wave: "all", Rollout: "r1", Now: monday10, MaxConcurrent: 10,
				InFlight: []InFlightTarget{
					{Target: makeTarget("elsewhere-us", "region=us"), Rollout: "r0"},
					{Target: makeTarget("elsewhere-mars", "region=mars"), Rollout: "r0"},
				}},
			wantStart: firstPerRegion(order, byID, "us"),
			// Only "us" members wait (2 of them): the majority of pending ones started.
			wantWaiting: WaitConstraint,
		},
		{
			name:        "constraint with a selector limits only matching targets",
			constraints: []fleetv1alpha1.ConcurrencyConstraint{oneCriticalRegion},
			req:         ScheduleRequest{Wave: "all", Rollout: "r1", Now: monday10, MaxConcurrent: 10},
			wantStart:   order,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			idx := NewScheduleIndex(plan, mustPolicy(t, tt.windows, tt.constraints...))
			d := Schedule(idx, tt.req)
			require.Equal(t, tt.wantStart, idsOf(d.Start))
			require.Equal(t, tt.wantWaiting, d.Waiting, d.Message)
			if tt.wantWaiting != "" {
				require.NotEmpty(t, d.Message)
			}
			require.Equal(t, tt.wantRetryAt.UTC(), d.RetryAt.UTC())
			if tt.wantMessage != "" {
				require.Equal(t, tt.wantMessage, d.Message)
			}
		})
	}
}

func TestSchedule_constraintMessage(t *testing.T) {
	t.Parallel()
	plan, err := Plan(makeSpec(), PlanInput{Candidates: []Target{makeTarget("a", "region=us"), makeTarget("b", "region=us")}})
	require.NoError(t, err)
	idx := NewScheduleIndex(plan, mustPolicy(t, nil,
		fleetv1alpha1.ConcurrencyConstraint{Name: "one-per-region", LabelKey: "region", MaxInFlight: 1}))
	d := Schedule(idx, ScheduleRequest{Wave: "all", Rollout: "r1",
		InFlight: []InFlightTarget{{Target: makeTarget("x", "region=us"), Rollout: "r0"}}})
	require.Empty(t, d.Start)
	require.Equal(t, WaitConstraint, d.Waiting)
	require.Equal(t, 2, d.BlockedByConstraint)
	require.Equal(t, "2 targets wait for constraint one-per-region: region=us already has 1 in flight (max 1)", d.Message)
	require.True(t, d.RetryAt.IsZero(), "constraints free up on events, not at a time")
}

func TestSchedule_nilPolicyAndDuplicateInFlight(t *testing.T) {
	t.Parallel()
	plan, err := Plan(makeSpec(fleetv1alpha1.Wave{Name: "all", MaxConcurrent: amountOf("2")}),
		PlanInput{Candidates: numbered(4)})
	require.NoError(t, err)
	idx := NewScheduleIndex(plan, nil)
	m := plan.Waves[0].Members
	d := Schedule(idx, ScheduleRequest{Wave: "all", Rollout: "r1",
		InFlight: []InFlightTarget{{Target: m[0], Rollout: "r1"}, {Target: m[0], Rollout: "r1"}}})
	require.Equal(t, []string{m[1].ID}, idsOf(d.Start), "an ID listed twice is in flight once")
}

func idsOf(ts []*Target) []string {
	if len(ts) == 0 {
		return nil
	}
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.ID
	}
	return out
}

func filter(order []string, byID map[string]Target, keep func(Target) bool) []string {
	var out []string
	for _, id := range order {
		if keep(byID[id]) {
			out = append(out, id)
		}
	}
	return out
}

// firstPerRegion keeps, in order, the first member of each region, skipping
// the blocked region and members without a region label (which the
// constraint does not limit, so they all start).
func firstPerRegion(order []string, byID map[string]Target, blocked string) []string {
	seen := map[string]bool{blocked: true}
	var out []string
	for _, id := range order {
		region, ok := byID[id].Labels["region"]
		if !ok {
			out = append(out, id)
			continue
		}
		if !seen[region] {
			seen[region] = true
			out = append(out, id)
		}
	}
	return out
}
