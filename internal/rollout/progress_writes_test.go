package rollout

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

func waves(succeeded ...int32) *fleetv1alpha1.FleetRolloutStatus {
	st := &fleetv1alpha1.FleetRolloutStatus{}
	for i, s := range succeeded {
		st.Waves = append(st.Waves, fleetv1alpha1.WaveProgress{Name: string(rune('a' + i)), Total: 500, Succeeded: s})
	}
	return st
}

func TestProgressWriteDue(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name          string
		written, next *fleetv1alpha1.FleetRolloutStatus
		since         time.Duration
		due           bool
		retry         time.Duration
	}{
		{"within the interval nothing is written", waves(0, 0), waves(100, 0), 500 * time.Millisecond, false, 500 * time.Millisecond},
		{"a 100th of the rollout finished: written", waves(10, 0), waves(20, 0), 2 * time.Second, true, 0},
		{"less than a 100th: waits for the longest wait", waves(10, 0), waves(19, 0), 2 * time.Second, false, 28 * time.Second},
		{"after the longest wait anything is written", waves(10, 0), waves(11, 0), 30 * time.Second, true, 0},
		{"finished targets of every wave count", waves(10, 5), waves(15, 10), 2 * time.Second, true, 0},
		{"a wave not written before counts from zero", waves(10), waves(10, 10), 2 * time.Second, true, 0},
		{"targets started count too", &fleetv1alpha1.FleetRolloutStatus{Waves: []fleetv1alpha1.WaveProgress{{Name: "a", Total: 1000, Pending: 1000}}},
			&fleetv1alpha1.FleetRolloutStatus{Waves: []fleetv1alpha1.WaveProgress{{Name: "a", Total: 1000, Pending: 937, InFlight: 63}}}, 2 * time.Second, true, 0},
		{"in-flight counts alone do not", &fleetv1alpha1.FleetRolloutStatus{Waves: []fleetv1alpha1.WaveProgress{{Name: "a", Total: 1000, InFlight: 10}}},
			&fleetv1alpha1.FleetRolloutStatus{Waves: []fleetv1alpha1.WaveProgress{{Name: "a", Total: 1000, InFlight: 9}}}, 2 * time.Second, false, 28 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			due, retry := ProgressWriteDue(tc.written, tc.next, tc.since)
			require.Equal(t, tc.due, due)
			require.Equal(t, tc.retry, retry)
		})
	}
	small := &fleetv1alpha1.FleetRolloutStatus{Waves: []fleetv1alpha1.WaveProgress{{Name: "a", Total: 10, Succeeded: 3}}}
	one := &fleetv1alpha1.FleetRolloutStatus{Waves: []fleetv1alpha1.WaveProgress{{Name: "a", Total: 10, Succeeded: 4}}}
	due, _ := ProgressWriteDue(small, one, time.Second)
	require.True(t, due, "a small rollout writes each finished target, a second apart")
}
