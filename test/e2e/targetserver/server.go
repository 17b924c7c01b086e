// Package targetserver is a stand-in for the clusters of an end-to-end fleet:
// the per-target promotion template calls it with Kargo's http step
// (GET /promote?target=<id>&freight=<name>) and it answers success, failure
// or a delayed success per (target, Freight), logging every call. Tests set
// the answers and read the log over HTTP, so the server may run in the test
// process or anywhere the Kargo controller can reach.
//
// It also serves each target's traffic as Prometheus metrics, for wave
// analysis: a target that a Freight reached (a /promote answered "done")
// serves RequestsPerSecond from then on, counted in
//
//	targetserver_requests_total{target="<id>",code="200"|"500"}
//
// and the share of them that fail is the error ratio of the Freight it runs
// now, plus a fleet-wide incident ratio (Errors), at most 1. The counters
// integrate the ratio over time, so
//
//	sum(rate(targetserver_requests_total{code="500"}[w])) / sum(rate(targetserver_requests_total[w]))
//
// is the ratio in force over the window. A target no Freight reached runs
// nothing and has no series. Unset ratios are 0.
//
// Endpoints:
//
//	GET  /promote?target=T&freight=F  {"state":"done"} or {"state":"failed"}
//	PUT  /rules                        replace the rules (JSON list of Rule)
//	GET  /calls                        every call so far (JSON list of Call)
//	PUT  /errors                       replace the error ratios (JSON Errors):
//	                                   {"freight":{"<name>":0.2},"incident":0.1}
//	GET  /errors                       the error ratios in force
//	GET  /metrics                      the traffic, Prometheus text format
//	GET  /healthz                      "ok"
package targetserver

import (
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/utils/clock"
)

// Outcomes a Rule can give.
const (
	// Succeed answers {"state":"done"}.
	Succeed = "succeed"
	// Fail answers {"state":"failed"}.
	Fail = "fail"
)

// Rule says how to answer the calls of a target for a Freight. An empty
// Target or Freight matches any. The first matching rule wins; without one
// the call succeeds at once.
type Rule struct {
	Target  string `json:"target,omitempty"`
	Freight string `json:"freight,omitempty"`
	// Outcome is Succeed (default) or Fail.
	Outcome string `json:"outcome,omitempty"`
	// Delay holds the answer back, e.g. "5s".
	Delay string `json:"delay,omitempty"`
}

// Call is one logged call.
type Call struct {
	Time    time.Time `json:"time"`
	Target  string    `json:"target"`
	Freight string    `json:"freight"`
	Outcome string    `json:"outcome"`
}

// Server answers promotion calls by its rules, logs them and serves each
// target's traffic as metrics.
type Server struct {
	mu    sync.Mutex
	rules []Rule
	calls []Call
	// Log, when set, receives one line per call.
	Log *log.Logger
	// Clock times the traffic; nil: the real clock.
	Clock clock.PassiveClock

	trafficOnce sync.Once
	traffic     *fleetTraffic
}

// Handler returns the server's HTTP handler.
func (s *Server) Handler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(s.fleetTraffic())
	mux := http.NewServeMux()
	mux.HandleFunc("GET /promote", s.promote)
	mux.HandleFunc("POST /promote", s.promote)
	mux.HandleFunc("PUT /rules", putJSON("rules", s.SetRules))
	mux.HandleFunc("GET /calls", s.getCalls)
	mux.HandleFunc("PUT /errors", putJSON("error ratios", s.SetErrors))
	mux.HandleFunc("GET /errors", s.getErrors)
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	return mux
}

// SetRules replaces the rules.
func (s *Server) SetRules(rules []Rule) error {
	for _, r := range rules {
		if err := r.validate(); err != nil {
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rules = append([]Rule(nil), rules...)
	return nil
}

// SetErrors replaces the error ratios of the traffic from now on.
func (s *Server) SetErrors(e Errors) error { return s.fleetTraffic().setErrors(e) }

// fleetTraffic returns the traffic of the fleet, created on first use.
func (s *Server) fleetTraffic() *fleetTraffic {
	s.trafficOnce.Do(func() {
		clk := s.Clock
		if clk == nil {
			clk = clock.RealClock{}
		}
		s.traffic = newTraffic(clk)
	})
	return s.traffic
}

// Calls returns a copy of the call log.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

func (r Rule) validate() error {
	if r.Outcome != "" && r.Outcome != Succeed && r.Outcome != Fail {
		return fmt.Errorf("rule outcome %q: want %q or %q", r.Outcome, Succeed, Fail)
	}
	if r.Delay != "" {
		if _, err := time.ParseDuration(r.Delay); err != nil {
			return fmt.Errorf("rule delay %q: %w", r.Delay, err)
		}
	}
	return nil
}

// match returns the answer and delay for (target, freight).
func (s *Server) match(target, freight string) (string, time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.rules {
		if (r.Target == "" || r.Target == target) && (r.Freight == "" || r.Freight == freight) {
			d, _ := time.ParseDuration(r.Delay) // validated by SetRules
			if r.Outcome == "" {
				return Succeed, d
			}
			return r.Outcome, d
		}
	}
	return Succeed, 0
}

func (s *Server) promote(w http.ResponseWriter, r *http.Request) {
	target, freight := r.URL.Query().Get("target"), r.URL.Query().Get("freight")
	if target == "" || freight == "" {
		http.Error(w, "target and freight query parameters are required", http.StatusBadRequest)
		return
	}
	outcome, delay := s.match(target, freight)
	s.mu.Lock()
	s.calls = append(s.calls, Call{Time: time.Now().UTC(), Target: target, Freight: freight, Outcome: outcome})
	s.mu.Unlock()
	if s.Log != nil {
		s.Log.Printf("promote target=%s freight=%s outcome=%s delay=%s", target, freight, outcome, delay)
	}
	select {
	case <-time.After(delay):
	case <-r.Context().Done():
		return
	}
	state := "done"
	if outcome == Fail {
		state = "failed"
	} else {
		s.fleetTraffic().run(target, freight)
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = fmt.Fprintf(w, `{"state":%q,"target":%q,"freight":%q}`, state, target, freight)
}

// putJSON answers a PUT of a JSON body: decoded (unknown fields refused)
// and handed to set, 204 on success, 400 when either refuses it.
func putJSON[T any](what string, set func(T) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var v T
		dec := json.NewDecoder(io.LimitReader(r.Body, 1<<20))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&v); err != nil {
			http.Error(w, "invalid "+what+": "+err.Error(), http.StatusBadRequest)
			return
		}
		if err := set(v); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}
}

func (s *Server) getErrors(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(s.fleetTraffic().currentErrors())
}

func (s *Server) getCalls(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(s.Calls())
}

// Start serves s on addr (e.g. "127.0.0.1:0") in the background and
// returns its base URL and a function that stops it.
func (s *Server) Start(addr string) (string, func() error, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	return "http://" + l.Addr().String(), srv.Close, nil
}
