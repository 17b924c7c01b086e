package audit

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

func TestPlanAppendFillsSegmentsInOrder(t *testing.T) {
	segs := trail(600, 7)
	require.Len(t, segs, 3)
	require.Equal(t, []int64{1, 257, 513}, []int64{segs[0].Spec.First, segs[1].Spec.First, segs[2].Spec.First})
	require.Len(t, segs[0].Spec.Records, fleetv1alpha1.MaxAuditRecordsPerSegment)
	require.Len(t, segs[2].Spec.Records, 600-512)
	require.Equal(t, "prod-audit-0000000257", segs[1].Name)
	require.Equal(t, segs[0].Spec.Records[255].Hash, segs[1].Spec.PreviousHash)
	require.Equal(t, "prod", segs[1].Labels[fleetv1alpha1.FleetStageLabel])
	rep := Verify(segs, headOf(segs))
	require.True(t, rep.OK(), rep.Problems)
	require.Equal(t, Report{Records: 600, First: 1, Last: 600}, rep)
}

func TestVerifyFindsEveryTampering(t *testing.T) {
	cases := map[string]struct {
		tamper func(segs []fleetv1alpha1.FleetAuditSegment, head *fleetv1alpha1.AuditHead) []fleetv1alpha1.FleetAuditSegment
		want   string
	}{
		"a record's message edited": {
			tamper: func(s []fleetv1alpha1.FleetAuditSegment, _ *fleetv1alpha1.AuditHead) []fleetv1alpha1.FleetAuditSegment {
				s[1].Spec.Records[3].Message = "nothing happened"
				return s
			},
			want: "record 260 (WavePassed) was changed",
		},
		"a record edited and its hash recomputed": {
			tamper: func(s []fleetv1alpha1.FleetAuditSegment, _ *fleetv1alpha1.AuditHead) []fleetv1alpha1.FleetAuditSegment {
				r := &s[0].Spec.Records[10]
				r.Actor = "nobody"
				r.Hash = Hash(s[0].Spec.Records[9].Hash, r)
				return s
			},
			want: "record 12 (WavePassed) was changed",
		},
		"a record deleted": {
			tamper: func(s []fleetv1alpha1.FleetAuditSegment, _ *fleetv1alpha1.AuditHead) []fleetv1alpha1.FleetAuditSegment {
				s[1].Spec.Records = slices.Delete(s[1].Spec.Records, 5, 6)
				return s
			},
			want: "record 262 of segment prod-audit-0000000257 has sequence 263",
		},
		"a middle segment deleted": {
			tamper: func(s []fleetv1alpha1.FleetAuditSegment, _ *fleetv1alpha1.AuditHead) []fleetv1alpha1.FleetAuditSegment {
				return append(s[:1:1], s[2:]...)
			},
			want: "records 257 to 512 are missing",
		},
		"the oldest segment deleted by someone else": {
			tamper: func(s []fleetv1alpha1.FleetAuditSegment, _ *fleetv1alpha1.AuditHead) []fleetv1alpha1.FleetAuditSegment {
				return s[1:]
			},
			want: "records 1 to 256 are missing and no retention record",
		},
		"the newest segment deleted": {
			tamper: func(s []fleetv1alpha1.FleetAuditSegment, _ *fleetv1alpha1.AuditHead) []fleetv1alpha1.FleetAuditSegment {
				return s[:2]
			},
			want: "the trail ends at record 512, but the controller wrote records up to 600",
		},
		"the newest record replaced": {
			tamper: func(s []fleetv1alpha1.FleetAuditSegment, _ *fleetv1alpha1.AuditHead) []fleetv1alpha1.FleetAuditSegment {
				rs := s[2].Spec.Records
				r := &rs[len(rs)-1]
				r.Message = "rewritten"
				r.Hash = Hash(rs[len(rs)-2].Hash, r)
				return s
			},
			want: "record 600 is not the one the controller wrote",
		},
		"two records swapped": {
			tamper: func(s []fleetv1alpha1.FleetAuditSegment, _ *fleetv1alpha1.AuditHead) []fleetv1alpha1.FleetAuditSegment {
				rs := s[0].Spec.Records
				rs[4], rs[5] = rs[5], rs[4]
				return s
			},
			want: "record 5 of segment prod-audit-0000000001 has sequence 6",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			segs := trail(600, 50)
			head := headOf(segs)
			require.True(t, Verify(segs, head).OK())
			rep := Verify(tc.tamper(segs, head), head)
			require.False(t, rep.OK())
			require.Contains(t, strings.Join(rep.Problems, "\n"), tc.want)
		})
	}
}

func TestRetentionIsTheControllersOnlyCut(t *testing.T) {
	segs := trail(5*256+10, 64)
	require.Len(t, segs, 6)
	sums := make([]Summary, len(segs))
	for i := range segs {
		sums[i] = Summarize(&segs[i])
	}
	drop, rec := Retain(sums, 4, t0.Add(100*60*60e9))
	require.Len(t, drop, 2)
	require.NotNil(t, rec)
	require.Equal(t, RetentionAction, rec.Action)
	require.Contains(t, rec.Message, "records 1 to 512")

	// The retention record joins the trail, then the segments go.
	head := TrailHead(segs)
	prev := head.Hash
	rs := []fleetv1alpha1.AuditRecord{*rec}
	head = Chain(head, rs)
	w := PlanAppend("p1", "prod", &segs[len(segs)-1], prev, rs)
	segs[len(segs)-1] = *w.Update
	kept := segs[2:]
	rep := Verify(kept, &fleetv1alpha1.AuditHead{Sequence: head.Sequence, Hash: head.Hash})
	require.True(t, rep.OK(), rep.Problems)
	require.Equal(t, int64(513), rep.First)
	require.Equal(t, int64(5*256+11), rep.Last)

	// Dropping one more segment is not what the record says.
	rep = Verify(kept[1:], nil)
	require.False(t, rep.OK())
	require.Contains(t, rep.Problems[0], "records 1 to 768 are missing")

	nothing, none := Retain(sums[2:], 4, t0)
	require.Empty(t, nothing)
	require.Nil(t, none)
}

func TestChainSurvivesAJSONRoundTrip(t *testing.T) {
	rs := records(0, 3)
	// Times below a microsecond are not stored: Chain drops them before
	// hashing, so what is read back hashes the same.
	rs[1].Time.Time = rs[1].Time.Add(999)
	head := Chain(Head{}, rs)
	w := PlanAppend("p1", "prod", nil, "", rs)
	body, err := json.Marshal(w.Create[0])
	require.NoError(t, err)
	var back fleetv1alpha1.FleetAuditSegment
	require.NoError(t, json.Unmarshal(body, &back))
	rep := Verify([]fleetv1alpha1.FleetAuditSegment{back}, &fleetv1alpha1.AuditHead{Sequence: head.Sequence, Hash: head.Hash})
	require.True(t, rep.OK(), rep.Problems)
	require.Equal(t, 3, rep.Records)
}
