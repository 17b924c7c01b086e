package audit

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

// SegmentName names the segment of fleetStage whose first record is first.
// The number is zero-padded, so names sort as segments follow each other.
func SegmentName(fleetStage string, first int64) string {
	return fmt.Sprintf("%s-audit-%010d", fleetStage, first)
}

// Sort orders segments by their first record.
func Sort(segments []fleetv1alpha1.FleetAuditSegment) {
	slices.SortFunc(segments, func(a, b fleetv1alpha1.FleetAuditSegment) int {
		return int(a.Spec.First - b.Spec.First)
	})
}

// TrailHead is the head of a trail whose segments are sorted: its newest
// record.
func TrailHead(segments []fleetv1alpha1.FleetAuditSegment) Head {
	for i := len(segments) - 1; i >= 0; i-- {
		if rs := segments[i].Spec.Records; len(rs) > 0 {
			return HeadOf(&rs[len(rs)-1])
		}
	}
	return Head{}
}

// Writes are what adds records to a trail.
type Writes struct {
	// Update is the newest segment with records appended; nil when it was
	// full or there was none.
	Update *fleetv1alpha1.FleetAuditSegment
	// Create are the new segments, in order.
	Create []*fleetv1alpha1.FleetAuditSegment
}

// PlanAppend lays records (already chained after the trail's head) out:
// appended to newest (the trail's newest segment, nil for a new trail) up
// to its capacity, the rest in new segments. newest is not changed.
func PlanAppend(namespace, fleetStage string, newest *fleetv1alpha1.FleetAuditSegment, previous string,
	records []fleetv1alpha1.AuditRecord) Writes {
	var w Writes
	if newest != nil && len(newest.Spec.Records) < fleetv1alpha1.MaxAuditRecordsPerSegment && len(records) > 0 {
		n := min(len(records), fleetv1alpha1.MaxAuditRecordsPerSegment-len(newest.Spec.Records))
		w.Update = newest.DeepCopy()
		w.Update.Spec.Records = append(w.Update.Spec.Records, records[:n]...)
		previous = records[n-1].Hash
		records = records[n:]
	}
	for len(records) > 0 {
		n := min(len(records), fleetv1alpha1.MaxAuditRecordsPerSegment)
		s := &fleetv1alpha1.FleetAuditSegment{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: namespace,
				Name:      SegmentName(fleetStage, records[0].Sequence),
				Labels:    map[string]string{fleetv1alpha1.FleetStageLabel: fleetStage},
			},
			Spec: fleetv1alpha1.FleetAuditSegmentSpec{
				FleetStage:   fleetStage,
				First:        records[0].Sequence,
				PreviousHash: previous,
				Records:      slices.Clone(records[:n]),
			},
		}
		w.Create = append(w.Create, s)
		previous = records[n-1].Hash
		records = records[n:]
	}
	return w
}

// RetentionAction is the action of the record that says the controller
// deleted the oldest segments to keep the trail bounded.
const RetentionAction = "AuditRetention"

// retentionKeyPrefix starts a retention record's key:
// "retention:<last deleted sequence>:<its hash>". Verify reads it to tell
// the controller's deletions from anyone else's.
const retentionKeyPrefix = "retention:"

// Summary is what the writer keeps of a stored segment.
type Summary struct {
	Name string
	UID  string
	// First is the sequence number of its first record, Last its last
	// record.
	First int64
	Last  Head
}

// Summarize is what the writer keeps of s.
func Summarize(s *fleetv1alpha1.FleetAuditSegment) Summary {
	sum := Summary{Name: s.Name, UID: string(s.UID), First: s.Spec.First}
	if rs := s.Spec.Records; len(rs) > 0 {
		sum.Last = HeadOf(&rs[len(rs)-1])
	}
	return sum
}

// Retain says which of the sorted segments to delete so at most keep
// remain, and the record that says so; none when the trail fits. The
// record goes into the trail before the segments are deleted: a trail
// whose oldest records are gone without it was cut by someone else.
func Retain(segments []Summary, keep int, now time.Time) ([]Summary, *fleetv1alpha1.AuditRecord) {
	keep = max(keep, 1)
	if len(segments) <= keep {
		return nil, nil
	}
	drop := segments[:len(segments)-keep]
	last := drop[len(drop)-1].Last
	return drop, &fleetv1alpha1.AuditRecord{
		Time:   metav1.NewMicroTime(now),
		Action: RetentionAction,
		Type:   "Normal",
		Actor:  ControllerActor,
		Message: fmt.Sprintf("Deleted %d audit segment(s), records %d to %d (the last with hash %s): the trail keeps its newest %d segments of %d records",
			len(drop), drop[0].First, last.Sequence, last.Hash, keep, fleetv1alpha1.MaxAuditRecordsPerSegment),
		Key: fmt.Sprintf("%s%d:%s", retentionKeyPrefix, last.Sequence, last.Hash),
	}
}

// retainedUpTo reads a retention record's key: the sequence and hash of
// the last record it deleted.
func retainedUpTo(r *fleetv1alpha1.AuditRecord) (Head, bool) {
	if r.Action != RetentionAction || !strings.HasPrefix(r.Key, retentionKeyPrefix) {
		return Head{}, false
	}
	seq, hash, ok := strings.Cut(strings.TrimPrefix(r.Key, retentionKeyPrefix), ":")
	if !ok {
		return Head{}, false
	}
	n, err := strconv.ParseInt(seq, 10, 64)
	if err != nil {
		return Head{}, false
	}
	return Head{Sequence: n, Hash: hash}, true
}
