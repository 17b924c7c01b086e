package dashboard

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/kargo-fleet/kargo-fleet/internal/audit"
	"github.com/kargo-fleet/kargo-fleet/internal/auditstore"
)

// AuditIntegrityHeader says whether the downloaded trail's hash chain is
// whole ("whole") or what is wrong with it.
const AuditIntegrityHeader = "X-Kargo-Fleet-Audit-Integrity"

// handleAudit serves a FleetStage's audit trail as a download: JSON lines
// (?format=jsonl, the default) or CSV (?format=csv), read with the
// viewer's rights, as `kargo-fleet audit` prints it. The chain is checked
// as the command checks it; the result is in AuditIntegrityHeader.
func (s *Server) handleAudit(w http.ResponseWriter, r *http.Request) {
	ns, name := r.PathValue("ns"), r.PathValue("name")
	format := r.URL.Query().Get("format")
	if format == "" {
		format = "jsonl"
	}
	if format != "jsonl" && format != "csv" {
		http.Error(w, "format is jsonl or csv", http.StatusBadRequest)
		return
	}
	ctx := r.Context()
	segs, err := auditstore.Read(ctx, s.direct, ns, name)
	if err != nil {
		s.fail(w, err)
		return
	}
	head, err := auditstore.Head(ctx, s.direct, ns, name)
	if err != nil {
		s.fail(w, err)
		return
	}
	rep := audit.Verify(segs, head)
	integrity := "whole"
	if !rep.OK() {
		integrity = "not whole: " + strings.Join(rep.Problems, "; ")
	}
	h := w.Header()
	h.Set(AuditIntegrityHeader, strings.ToValidUTF8(strings.Map(headerSafe, integrity), "?"))
	h.Set("Content-Disposition", fmt.Sprintf(`attachment; filename="%s-%s-audit.%s"`, ns, name, format))
	h.Set("Cache-Control", "no-store")
	if format == "csv" {
		h.Set("Content-Type", "text/csv; charset=utf-8")
	} else {
		h.Set("Content-Type", "application/jsonl; charset=utf-8")
	}
	if r.Method == http.MethodHead {
		return
	}
	entries := audit.Entries(segs)
	if format == "csv" {
		err = audit.WriteCSV(w, entries, &audit.Filter{})
	} else {
		err = audit.WriteJSONLines(w, entries, &audit.Filter{})
	}
	if err != nil {
		s.o.Log.Error(err, "Writing an audit trail download failed", "namespace", ns, "fleetStage", name)
	}
}

// headerSafe keeps a header value on one line of printable characters.
func headerSafe(r rune) rune {
	if r < ' ' || r == 0x7f {
		return ' '
	}
	return r
}
