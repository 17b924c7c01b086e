package audit

import (
	"testing"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

// FuzzVerify changes one field of one record of a whole trail: Verify must
// never panic and must never call the changed trail whole.
func FuzzVerify(f *testing.F) {
	f.Add(uint16(3), uint8(0), "edited")
	f.Add(uint16(300), uint8(2), "")
	f.Add(uint16(0), uint8(5), "x")
	f.Fuzz(func(t *testing.T, at uint16, field uint8, value string) {
		segs := trail(400, 33)
		head := headOf(segs)
		i := int(at) % 400
		s := &segs[i/fleetv1alpha1.MaxAuditRecordsPerSegment]
		r := &s.Spec.Records[i%fleetv1alpha1.MaxAuditRecordsPerSegment]
		before := *r
		switch field % 6 {
		case 0:
			r.Message = value
		case 1:
			r.Actor = value
		case 2:
			r.Action = value
		case 3:
			r.Stage = value
		case 4:
			r.Key = value
		default:
			r.Hash = value
		}
		rep := Verify(segs, head)
		if *r != before && rep.OK() {
			t.Fatalf("record %d changed to %+v, and the trail verified", i+1, *r)
		}
		if *r == before && !rep.OK() {
			t.Fatalf("unchanged trail failed: %v", rep.Problems)
		}
	})
}
