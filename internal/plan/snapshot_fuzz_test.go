package plan

import (
	"bytes"
	"compress/gzip"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzDecodePlan decodes arbitrary plan snapshots (the ConfigMap is
// writable by anyone who may write ConfigMaps in the Project): nothing
// panics, and a snapshot that decodes encodes and decodes again to the same
// plan.
func FuzzDecodePlan(f *testing.F) {
	p := &WavePlan{Hash: "abc", Candidates: 2, Waves: []PlannedWave{{Name: "pilot",
		Members: []Target{{ID: "c1", Name: "c1", Source: "Inline", Params: map[string]string{"a": "b"}}}}}}
	raw, err := EncodeSnapshot(p)
	require.NoError(f, err)
	f.Add(raw)
	f.Add([]byte("not gzip"))
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write([]byte(`{"waves":[{"name":"x","members":null}],"candidates":-1}`))
	_ = zw.Close()
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, raw []byte) {
		p, err := DecodeSnapshot(raw)
		if err != nil {
			return
		}
		again, err := EncodeSnapshot(p)
		require.NoError(t, err)
		q, err := DecodeSnapshot(again)
		require.NoError(t, err)
		require.Equal(t, p, q)
	})
}
