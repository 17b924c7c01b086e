package plan

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestVerdict(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		th         Thresholds
		failures   FailureCounts
		wantReason HaltReason
		wantMsg    string
	}{
		{
			name:     "no failures",
			th:       Thresholds{Wave: "pilot", WaveTotal: 5, WaveMaxFailures: 0, FleetMaxFailures: -1},
			failures: FailureCounts{},
		},
		{
			name:       "maxFailures 0 halts on the first failure",
			th:         Thresholds{Wave: "pilot", WaveTotal: 5, WaveMaxFailures: 0, FleetMaxFailures: -1},
			failures:   FailureCounts{Wave: 1, Fleet: 1},
			wantReason: HaltWaveThreshold,
			wantMsg:    "wave pilot: 1 of 5 targets failed, more than the 0 allowed by maxFailures",
		},
		{
			name:     "failures equal to the allowance continue",
			th:       Thresholds{Wave: "general", WaveTotal: 100, WaveMaxFailures: 2, FleetMaxFailures: -1},
			failures: FailureCounts{Wave: 2, Fleet: 2},
		},
		{
			name:       "one more halts",
			th:         Thresholds{Wave: "general", WaveTotal: 100, WaveMaxFailures: 2, FleetMaxFailures: -1},
			failures:   FailureCounts{Wave: 3, Fleet: 3},
			wantReason: HaltWaveThreshold,
		},
		{
			name:       "fleet-wide threshold across waves",
			th:         Thresholds{Wave: "general", WaveTotal: 100, WaveMaxFailures: 5, FleetTotal: 200, FleetMaxFailures: 3},
			failures:   FailureCounts{Wave: 2, Fleet: 4},
			wantReason: HaltFleetThreshold,
			wantMsg:    "fleet: 4 of 200 targets failed, more than the 3 allowed by spec.policy.maxFailures",
		},
		{
			name:       "the wave is named first when both are breached",
			th:         Thresholds{Wave: "general", WaveTotal: 10, WaveMaxFailures: 0, FleetTotal: 200, FleetMaxFailures: 0},
			failures:   FailureCounts{Wave: 1, Fleet: 1},
			wantReason: HaltWaveThreshold,
		},
		{
			name:     "a fleet allowance of 0 with no failures continues",
			th:       Thresholds{Wave: "general", WaveTotal: 10, FleetTotal: 10, FleetMaxFailures: 0},
			failures: FailureCounts{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := Verdict(tt.th, tt.failures)
			require.Equal(t, tt.wantReason != "", v.Halted())
			require.Equal(t, tt.wantReason, v.Reason)
			if tt.wantReason == "" {
				require.Equal(t, ThresholdVerdict{Decision: VerdictContinue}, v)
				return
			}
			require.Equal(t, VerdictHalt, v.Decision)
			if tt.wantMsg != "" {
				require.Equal(t, tt.wantMsg, v.Message)
			}
		})
	}
}

// TestVerdict_percentRoundsDown checks the documented rule end to end:
// allowed = floor(pct*total/100), halt when failures > allowed.
func TestVerdict_percentRoundsDown(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name            string
		pct             string
		total           int
		wantAllowed     int
		wantHaltAtCount int
	}{
		{name: "10% of 9 allows none", pct: "10%", total: 9, wantAllowed: 0, wantHaltAtCount: 1},
		{name: "10% of 10 allows one", pct: "10%", total: 10, wantAllowed: 1, wantHaltAtCount: 2},
		{name: "10% of 19 allows one", pct: "10%", total: 19, wantAllowed: 1, wantHaltAtCount: 2},
		{name: "100% never halts", pct: "100%", total: 4, wantAllowed: 4, wantHaltAtCount: 5},
		{name: "0% halts on the first", pct: "0%", total: 50, wantAllowed: 0, wantHaltAtCount: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			spec := makeSpecWithMaxFailures(tt.pct)
			p, err := Plan(spec, PlanInput{Candidates: numbered(tt.total)})
			require.NoError(t, err)
			th, ok := p.Thresholds("all")
			require.True(t, ok)
			require.Equal(t, tt.wantAllowed, th.WaveMaxFailures)
			require.Equal(t, tt.wantAllowed, th.FleetMaxFailures)
			for failures := 0; failures <= tt.total; failures++ {
				v := Verdict(th, FailureCounts{Wave: failures, Fleet: failures})
				require.Equal(t, failures >= tt.wantHaltAtCount, v.Halted(), "failures=%d", failures)
			}
		})
	}
}
