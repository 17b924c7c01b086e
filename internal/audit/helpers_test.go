package audit

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

var t0 = time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)

// records makes n records one second apart, unchained.
func records(from, n int) []fleetv1alpha1.AuditRecord {
	out := make([]fleetv1alpha1.AuditRecord, n)
	for i := range out {
		out[i] = fleetv1alpha1.AuditRecord{
			Time:    metav1.NewMicroTime(t0.Add(time.Duration(from+i) * time.Second)),
			Action:  "WavePassed",
			Type:    "Normal",
			Actor:   "kargo-fleet",
			Rollout: "prod-v2",
			Freight: "f2",
			Message: fmt.Sprintf("decision %d", from+i),
		}
	}
	return out
}

// trail writes n records through PlanAppend as the writer does, in
// batches of batch, and returns the sorted segments.
func trail(n, batch int) []fleetv1alpha1.FleetAuditSegment {
	var segs []fleetv1alpha1.FleetAuditSegment
	var head Head
	for done := 0; done < n; done += batch {
		rs := records(done, min(batch, n-done))
		prev := head.Hash
		head = Chain(head, rs)
		var newest *fleetv1alpha1.FleetAuditSegment
		if len(segs) > 0 {
			newest = &segs[len(segs)-1]
		}
		w := PlanAppend("p1", "prod", newest, prev, rs)
		if w.Update != nil {
			segs[len(segs)-1] = *w.Update
		}
		for _, c := range w.Create {
			segs = append(segs, *c)
		}
	}
	return segs
}

func headOf(segs []fleetv1alpha1.FleetAuditSegment) *fleetv1alpha1.AuditHead {
	h := TrailHead(segs)
	return &fleetv1alpha1.AuditHead{Sequence: h.Sequence, Hash: h.Hash}
}
