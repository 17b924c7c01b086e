package plan

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSnapshotRoundTrip(t *testing.T) {
	t.Parallel()
	five := 5
	p := &WavePlan{Hash: "abc", FleetMaxFailures: &five, Waves: []PlannedWave{{
		Name: "canary", MaxConcurrent: 2, MaxFailures: 1, ProgressDeadline: time.Minute,
		Members: []Target{{ID: "eu-1", Name: "EU 1", Labels: map[string]string{"region": "eu"}, Params: map[string]string{"p": "v"}}},
	}}}
	raw, err := EncodeSnapshot(p)
	require.NoError(t, err)
	got, err := DecodeSnapshot(raw)
	require.NoError(t, err)
	require.Equal(t, p, got)

	_, err = DecodeSnapshot([]byte("not gzip"))
	require.ErrorContains(t, err, "error decompressing plan snapshot")
}
