package audit

import (
	"fmt"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

// maxProblems bounds a report: a trail cut in many places says so in the
// first few.
const maxProblems = 20

// Report is what Verify found.
type Report struct {
	// Records counts the records read.
	Records int `json:"records"`
	// First and Last are the sequence numbers of the oldest and newest.
	First int64 `json:"first"`
	Last  int64 `json:"last"`
	// Problems say, for people, where the trail was changed, cut or
	// shortened; empty when it is whole.
	Problems []string `json:"problems,omitempty"`
}

// OK says the trail is whole.
func (r Report) OK() bool { return len(r.Problems) == 0 }

func (r *Report) problem(format string, args ...any) {
	if len(r.Problems) < maxProblems {
		r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
	}
}

// Verify checks a FleetStage's trail: segments sorted by Sort, head the
// FleetStage's status.audit (nil when it is gone). Every record must hash
// to its hash from the one before; sequence numbers run without gaps from
// the oldest segment to the newest; the oldest records may be missing only
// where a retention record of the controller says it deleted them; and the
// trail must reach head with the same hash. An edit of a record, a
// deleted or reordered record or segment, and a cut end each break one of
// these.
func Verify(segments []fleetv1alpha1.FleetAuditSegment, head *fleetv1alpha1.AuditHead) Report {
	var rep Report
	var prev Head
	retained := map[Head]bool{}
	for i := range segments {
		s := &segments[i]
		switch {
		case i == 0:
			prev = Head{Sequence: s.Spec.First - 1, Hash: s.Spec.PreviousHash}
		case s.Spec.First != prev.Sequence+1:
			rep.problem("records %d to %d are missing: segment %s starts at %d", prev.Sequence+1, s.Spec.First-1, s.Name, s.Spec.First)
			prev = Head{Sequence: s.Spec.First - 1, Hash: s.Spec.PreviousHash}
		case s.Spec.PreviousHash != prev.Hash:
			rep.problem("segment %s does not follow record %d: its previousHash is not that record's hash", s.Name, prev.Sequence)
		}
		if len(s.Spec.Records) == 0 {
			rep.problem("segment %s holds no record", s.Name)
		}
		for j := range s.Spec.Records {
			r := &s.Spec.Records[j]
			if r.Sequence != prev.Sequence+1 {
				rep.problem("record %d of segment %s has sequence %d", prev.Sequence+1, s.Name, r.Sequence)
			}
			if Hash(prev.Hash, r) != r.Hash {
				rep.problem("record %d (%s) was changed: it does not hash to its hash from the record before", r.Sequence, r.Action)
			}
			if h, ok := retainedUpTo(r); ok {
				retained[h] = true
			}
			rep.Records++
			if rep.First == 0 {
				rep.First = r.Sequence
			}
			prev = HeadOf(r)
		}
	}
	rep.Last = prev.Sequence
	if len(segments) > 0 && segments[0].Spec.First > 1 {
		cut := Head{Sequence: segments[0].Spec.First - 1, Hash: segments[0].Spec.PreviousHash}
		if !retained[cut] {
			rep.problem("records 1 to %d are missing and no retention record of the controller says it deleted them", cut.Sequence)
		}
	}
	verifyHead(&rep, segments, head)
	return rep
}

// verifyHead checks the trail reaches the head the controller last wrote
// into the FleetStage's status. Records after it are fine: the status is
// written after the records.
func verifyHead(rep *Report, segments []fleetv1alpha1.FleetAuditSegment, head *fleetv1alpha1.AuditHead) {
	if head == nil {
		return
	}
	if rep.Last < head.Sequence {
		rep.problem("the trail ends at record %d, but the controller wrote records up to %d (FleetStage status.audit): the newest records were deleted",
			rep.Last, head.Sequence)
		return
	}
	for i := range segments {
		for j := range segments[i].Spec.Records {
			r := &segments[i].Spec.Records[j]
			if r.Sequence == head.Sequence && r.Hash != head.Hash {
				rep.problem("record %d is not the one the controller wrote (FleetStage status.audit has another hash)", r.Sequence)
			}
		}
	}
}
