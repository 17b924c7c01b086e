package audit

import (
	"encoding/csv"
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"time"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/render"
)

// Entry is one record with the FleetStage it belongs to: a line of an
// export.
type Entry struct {
	Namespace  string `json:"namespace"`
	FleetStage string `json:"fleetStage"`
	fleetv1alpha1.AuditRecord
}

// Entries are the records of sorted segments, in order.
func Entries(segments []fleetv1alpha1.FleetAuditSegment) []Entry {
	n := 0
	for i := range segments {
		n += len(segments[i].Spec.Records)
	}
	out := make([]Entry, 0, n)
	for i := range segments {
		s := &segments[i]
		for j := range s.Spec.Records {
			out = append(out, Entry{Namespace: s.Namespace, FleetStage: s.Spec.FleetStage, AuditRecord: s.Spec.Records[j]})
		}
	}
	return out
}

// Filter selects records. A zero field selects all.
type Filter struct {
	// Since and Until bound the record's time (Since included, Until
	// excluded).
	Since, Until time.Time
	// FleetStage is the FleetStage's name.
	FleetStage string
	// Target is a target ID or a Stage name: the record's stage is that
	// Stage, or the target's Stage.
	Target string
	// Freight is a Freight's name.
	Freight string
	// Actor is found, ignoring case, in the record's actor or identity.
	Actor string
}

// Match says the filter selects e.
func (f *Filter) Match(e *Entry) bool {
	t := e.Time.Time
	switch {
	case !f.Since.IsZero() && t.Before(f.Since),
		!f.Until.IsZero() && !t.Before(f.Until),
		f.FleetStage != "" && e.FleetStage != f.FleetStage,
		f.Freight != "" && e.Freight != f.Freight,
		f.Target != "" && e.Stage != f.Target && e.Stage != render.TargetStageName(e.FleetStage, f.Target):
		return false
	case f.Actor != "":
		a := strings.ToLower(f.Actor)
		return strings.Contains(strings.ToLower(e.Actor), a) || strings.Contains(strings.ToLower(e.Identity), a)
	}
	return true
}

// WriteJSONLines writes the entries f selects, one JSON object a line.
func WriteJSONLines(w io.Writer, entries []Entry, f *Filter) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for i := range entries {
		if !f.Match(&entries[i]) {
			continue
		}
		if err := enc.Encode(&entries[i]); err != nil {
			return err
		}
	}
	return nil
}

// CSVHeader is the first line of a CSV export.
var CSVHeader = []string{"namespace", "fleetStage", "sequence", "time", "action", "type", "actor", "identity",
	"rollout", "wave", "freight", "stage", "message", "key", "hash"}

// WriteCSV writes the entries f selects as CSV, after CSVHeader.
func WriteCSV(w io.Writer, entries []Entry, f *Filter) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(CSVHeader); err != nil {
		return err
	}
	row := make([]string, len(CSVHeader))
	for i := range entries {
		e := &entries[i]
		if !f.Match(e) {
			continue
		}
		row = append(row[:0], e.Namespace, e.FleetStage, strconv.FormatInt(e.Sequence, 10),
			e.Time.UTC().Format(time.RFC3339Nano), e.Action, e.Type, cell(e.Actor), cell(e.Identity),
			e.Rollout, e.Wave, e.Freight, e.Stage, cell(e.Message), cell(e.Key), e.Hash)
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// cell keeps a spreadsheet from reading a free-text field as a formula: a
// break-glass reason or a person's name is written by whoever asked, and a
// cell starting with = + - or @ would run when an auditor opens the file.
// Such a cell starts with a quote, as OWASP advises for CSV exports.
func cell(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}
