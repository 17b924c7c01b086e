package audit

import (
	"encoding/json"
	"io"
	"testing"
)

// BenchmarkExport100000 verifies and exports 100,000 records as JSON lines
// and as CSV, once each, as `kargo-fleet audit --verify` does after
// reading them. It reports the bytes the segments take as JSON per 1,000
// records: about what etcd stores for them.
func BenchmarkExport100000(b *testing.B) {
	segs := trail(100_000, 500)
	var size int
	for i := range segs {
		body, err := json.Marshal(&segs[i])
		if err != nil {
			b.Fatal(err)
		}
		size += len(body)
	}
	b.ResetTimer()
	for b.Loop() {
		if rep := Verify(segs, headOf(segs)); !rep.OK() {
			b.Fatal(rep.Problems)
		}
		es := Entries(segs)
		if err := WriteJSONLines(io.Discard, es, &Filter{}); err != nil {
			b.Fatal(err)
		}
		if err := WriteCSV(io.Discard, es, &Filter{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(size)/100, "bytes/1000records")
}

// BenchmarkChain is the cost of hashing one record into the trail.
func BenchmarkChain(b *testing.B) {
	rs := records(0, 1)
	var head Head
	for b.Loop() {
		head = Chain(head, rs)
	}
}
