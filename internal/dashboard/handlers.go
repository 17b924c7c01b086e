package dashboard

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kargo-fleet/kargo-fleet/internal/dashboard/link"
)

// pageData is what the page templates render.
type pageData struct {
	Title    string
	Projects []ProjectView
	// Project is set on one Project's page.
	Project string
	// Fleet is set on a FleetStage's page.
	Fleet *FleetView
	// Namespace and Name identify the FleetStage.
	Namespace, Name string
	// API is the FleetStage's API path.
	API string
	// Analysis is set on a wave's analysis page.
	Analysis *AnalysisView
}

func (s *Server) handleProjects(w http.ResponseWriter, r *http.Request) {
	ns := r.PathValue("ns")
	projects, err := s.projects(r.Context(), ns)
	if err != nil {
		s.fail(w, err)
		return
	}
	title := "Projects"
	if ns != "" {
		title = "Project " + ns
	}
	s.render(w, "projects", pageData{Title: title, Projects: projects, Project: ns})
}

func (s *Server) handleFleetStage(w http.ResponseWriter, r *http.Request) {
	ns, name := r.PathValue("ns"), r.PathValue("name")
	in, err := s.fleetInput(r.Context(), ns, name, r.URL.Query().Get("groupBy"))
	if err != nil {
		s.fail(w, err)
		return
	}
	v := BuildFleet(in)
	s.render(w, "fleetstage", pageData{Title: "FleetStage " + ns + "/" + name, Fleet: &v, Namespace: ns, Name: name,
		API: "/api" + link.FleetStagePath(ns, name)})
}

func (s *Server) handleGrid(w http.ResponseWriter, r *http.Request) {
	in, err := s.fleetInput(r.Context(), r.PathValue("ns"), r.PathValue("name"), r.URL.Query().Get("groupBy"))
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, BuildFleet(in).Grid)
}

func (s *Server) handleTarget(w http.ResponseWriter, r *http.Request) {
	in, err := s.fleetInput(r.Context(), r.PathValue("ns"), r.PathValue("name"), "")
	if err != nil {
		s.fail(w, err)
		return
	}
	d, ok := BuildTarget(in, r.PathValue("id"))
	if !ok {
		http.Error(w, fmt.Sprintf("FleetStage %q has no target %q", r.PathValue("name"), r.PathValue("id")),
			http.StatusNotFound)
		return
	}
	writeJSON(w, d)
}

// update is one server-sent event: the page's summary, rendered, and the
// grid's live part.
type update struct {
	Summary string `json:"summary"`
	Key     string `json:"key"`
	Live
}

// handleEvents streams updates of a FleetStage's page as server-sent
// events: one as soon as the page connects, then one after changes, at
// most one per Options.Coalesce, fed by the Project's informers.
func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request) {
	ns, name, groupBy := r.PathValue("ns"), r.PathValue("name"), r.URL.Query().Get("groupBy")
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming is not supported", http.StatusInternalServerError)
		return
	}
	if !s.streams.take() {
		w.Header().Set("Retry-After", "10")
		http.Error(w, fmt.Sprintf("the dashboard serves at most %d live pages at once: close some", cap(s.streams)),
			http.StatusServiceUnavailable)
		return
	}
	defer s.streams.give()
	nc, err := s.namespace(r.Context(), ns)
	if err != nil {
		s.fail(w, err)
		return
	}
	changes, stop := nc.hub.subscribe()
	defer stop()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	ctx := r.Context()
	var last time.Time
	push := func() error {
		in, err := s.fleetInput(ctx, ns, name, groupBy)
		if err != nil {
			_, werr := fmt.Fprintf(w, "event: problem\ndata: %s\n\n", jsonString(err.Error()))
			return werr
		}
		v := BuildFleet(in)
		var summary bytes.Buffer
		if err := templates.ExecuteTemplate(&summary, "summary", pageData{Fleet: &v, Namespace: ns, Name: name}); err != nil {
			return err
		}
		data, err := json.Marshal(update{Summary: summary.String(), Key: v.Grid.Key, Live: v.Grid.Live})
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "event: update\ndata: %s\n\n", data); err != nil {
			return err
		}
		flusher.Flush()
		last = s.o.Clock.Now()
		return nil
	}
	if err := push(); err != nil {
		return
	}
	ping := time.NewTicker(keepAlive)
	defer ping.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ping.C:
			if _, err := io.WriteString(w, ": keep-alive\n\n"); err != nil {
				return
			}
			flusher.Flush()
			continue
		case <-changes:
		}
		// Coalesce: at most one push per interval; events arriving while
		// waiting are folded into this push.
		if wait := last.Add(s.o.Coalesce).Sub(s.o.Clock.Now()); wait > 0 {
			select {
			case <-ctx.Done():
				return
			case <-s.o.Clock.After(wait):
			}
		}
		select {
		case <-changes:
		default:
		}
		if err := push(); err != nil {
			return
		}
	}
}

func (s *Server) render(w http.ResponseWriter, name string, data pageData) {
	var buf bytes.Buffer
	if err := templates.ExecuteTemplate(&buf, name, data); err != nil {
		s.fail(w, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(buf.Bytes())
}

// fail answers an error: 404 for what does not exist or is not served, 403
// for what the viewer may not read, 503 when the API server does not
// answer at all (no cluster, a wrong kubeconfig), with what to check, 500
// otherwise.
func (s *Server) fail(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	var status apierrors.APIStatus
	switch {
	case apierrors.IsNotFound(err), errors.As(err, new(notServedError)):
		code = http.StatusNotFound
	case apierrors.IsForbidden(err), apierrors.IsUnauthorized(err):
		code = http.StatusForbidden
	case !errors.As(err, &status):
		s.o.Log.Error(err, "The API server does not answer")
		http.Error(w, "The dashboard cannot reach the Kubernetes API server it reads the fleets from. Check the "+
			"kubeconfig it was started with (its server address, your credentials' expiry) and the network, then "+
			"reload this page.\n\n"+err.Error(), http.StatusServiceUnavailable)
		return
	}
	if code == http.StatusInternalServerError {
		s.o.Log.Error(err, "Cannot serve a dashboard page")
	}
	http.Error(w, err.Error(), code)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(v)
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// gzipped compresses responses for clients that accept it, except event
// streams, which must reach the browser as they are written.
func gzipped(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") || strings.HasSuffix(r.URL.Path, "/events") {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Add("Vary", "Accept-Encoding")
		zw := gzip.NewWriter(w)
		defer func() { _ = zw.Close() }()
		next.ServeHTTP(gzipWriter{ResponseWriter: w, w: zw}, r)
	})
}

type gzipWriter struct {
	http.ResponseWriter
	w io.Writer
}

func (g gzipWriter) Write(b []byte) (int, error) {
	g.Header().Del("Content-Length")
	return g.w.Write(b)
}
