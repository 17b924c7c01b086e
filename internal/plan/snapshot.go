package plan

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
)

// A rollout's plan snapshot lives in an immutable ConfigMap owned by the
// rollout, as gzip-compressed JSON (see FleetRollout.status.snapshot).
const (
	// SnapshotKey is the ConfigMap key holding the compressed plan.
	SnapshotKey = "plan.json.gz"
	// maxSnapshotBytes bounds a decompressed plan snapshot (a 10,000-target
	// plan is a few MiB): anyone who may write ConfigMaps in the Project can
	// write one, and 1 MiB of gzip could otherwise expand to gigabytes.
	maxSnapshotBytes = 64 << 20
)

// DecodeSnapshot decodes a plan snapshot as stored under SnapshotKey.
func DecodeSnapshot(raw []byte) (*WavePlan, error) {
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("error decompressing plan snapshot: %w", err)
	}
	data, err := io.ReadAll(io.LimitReader(zr, maxSnapshotBytes+1))
	if err != nil {
		return nil, fmt.Errorf("error decompressing plan snapshot: %w", err)
	}
	if len(data) > maxSnapshotBytes {
		return nil, fmt.Errorf("error decompressing plan snapshot: it expands to more than %d bytes", maxSnapshotBytes)
	}
	p := &WavePlan{}
	if err := json.Unmarshal(data, p); err != nil {
		return nil, fmt.Errorf("error decoding plan snapshot: %w", err)
	}
	return p, nil
}

// EncodeSnapshot encodes p as stored under SnapshotKey.
func EncodeSnapshot(p *WavePlan) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if err := json.NewEncoder(zw).Encode(p); err != nil {
		return nil, fmt.Errorf("error encoding plan snapshot: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("error compressing plan snapshot: %w", err)
	}
	return buf.Bytes(), nil
}
