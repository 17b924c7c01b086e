package fleetrollouts

import (
	"bytes"
	"compress/gzip"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kargo-fleet/kargo-fleet/internal/plan"
)

// FuzzDecodePlan decodes arbitrary plan snapshots (the ConfigMap is
// writable by anyone who may write ConfigMaps in the Project): nothing
// panics, and a snapshot that decodes encodes and decodes again to the same
// plan.
func FuzzDecodePlan(f *testing.F) {
	p := &plan.WavePlan{Hash: "abc", Candidates: 2, Waves: []plan.PlannedWave{{Name: "pilot",
		Members: []plan.Target{{ID: "c1", Name: "c1", Source: "Inline", Params: map[string]string{"a": "b"}}}}}}
	raw, err := encodePlan(p)
	require.NoError(f, err)
	f.Add(raw)
	f.Add([]byte("not gzip"))
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write([]byte(`{"waves":[{"name":"x","members":null}],"candidates":-1}`))
	_ = zw.Close()
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, raw []byte) {
		p, err := decodePlan(raw)
		if err != nil {
			return
		}
		again, err := encodePlan(p)
		require.NoError(t, err)
		q, err := decodePlan(again)
		require.NoError(t, err)
		require.Equal(t, p, q)
	})
}
