package kargosim

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/traffic"
)

// Defaults of ServiceMetrics.
const (
	// DefaultServiceAddress serves the metrics on a free loopback port.
	DefaultServiceAddress = "127.0.0.1:0"
	// DefaultServiceErrorRatio is the error ratio of a target whose Freight
	// has no ratio of its own: 0.1 % of its requests fail.
	DefaultServiceErrorRatio = 0.001
	// DefaultServiceRequestsPerSecond is how many requests each target's
	// simulated service answers per second.
	DefaultServiceRequestsPerSecond = 100
)

// ServiceRequestsMetric is the counter the simulator serves for every
// target Stage: the requests its simulated service answered, labelled
// project, stage, cluster (the target's id) and code ("200" or "500").
const ServiceRequestsMetric = "kargo_simulator_http_requests_total"

// ServiceMetricsPath is where the metrics are served.
const ServiceMetricsPath = "/metrics"

// ServiceMetrics makes the simulator serve Prometheus metrics of the
// service each target Stage runs, as the clusters of a fleet would: a
// request counter per target whose share of failed requests follows the
// Freight the Stage currently runs. A wave analysis can then gate a wave on
// the error rate of its targets.
type ServiceMetrics struct {
	// Address is where ServiceMetricsPath is served, host:port (default
	// DefaultServiceAddress; Simulator.MetricsAddress says which port was
	// taken).
	Address string
	// ErrorRatios is the share of failed requests (0 to 1) of a target
	// running the Freight, by Freight name; the name is matched in every
	// Project.
	ErrorRatios map[string]float64
	// DefaultErrorRatio is the share of failed requests of a target running
	// any other Freight, or none (default DefaultServiceErrorRatio).
	DefaultErrorRatio float64
	// RequestsPerSecond is how many requests each target answers per second
	// (default DefaultServiceRequestsPerSecond).
	RequestsPerSecond float64
	// TargetLabel is the Stage label holding the target's id: only Stages
	// with it are served, its value is the series' cluster label (default
	// fleetv1alpha1.TargetLabel).
	TargetLabel string
}

func (m ServiceMetrics) withDefaults() ServiceMetrics {
	if m.Address == "" {
		m.Address = DefaultServiceAddress
	}
	if m.DefaultErrorRatio <= 0 {
		m.DefaultErrorRatio = DefaultServiceErrorRatio
	}
	if m.RequestsPerSecond <= 0 {
		m.RequestsPerSecond = DefaultServiceRequestsPerSecond
	}
	if m.TargetLabel == "" {
		m.TargetLabel = fleetv1alpha1.TargetLabel
	}
	return m
}

// validate refuses ratios that are not shares of requests.
func (m ServiceMetrics) validate() error {
	if m.DefaultErrorRatio > 1 {
		return fmt.Errorf("default error ratio %v is above 1", m.DefaultErrorRatio)
	}
	for freight, r := range m.ErrorRatios {
		if err := traffic.ValidateRatio(r); err != nil {
			return fmt.Errorf("error ratio of Freight %q: %w", freight, err)
		}
	}
	return nil
}

// errorRatio is the error ratio of a Stage running these Freight: the
// highest of their ratios, else the default.
func (m ServiceMetrics) errorRatio(freight []string) float64 {
	ratio, found := 0.0, false
	for _, name := range freight {
		if r, ok := m.ErrorRatios[name]; ok && (!found || r > ratio) {
			ratio, found = r, true
		}
	}
	if !found {
		return m.DefaultErrorRatio
	}
	return ratio
}

// serviceCollector reads the target Stages at each scrape and reports
// their counters.
type serviceCollector struct {
	cfg    ServiceMetrics
	reader client.Reader
	clock  clock.PassiveClock
	desc   *prometheus.Desc

	mu       sync.Mutex
	meter    *traffic.Meter[types.NamespacedName]
	incident float64
}

func newServiceCollector(cfg ServiceMetrics, reader client.Reader, clk clock.PassiveClock) *serviceCollector {
	return &serviceCollector{cfg: cfg, reader: reader, clock: clk,
		desc: prometheus.NewDesc(ServiceRequestsMetric,
			"Requests the simulated service of a target Stage answered, by status code (Kargo simulator).",
			[]string{"project", "stage", "cluster", "code"}, nil),
		meter: traffic.NewMeter[types.NamespacedName](cfg.RequestsPerSecond)}
}

// Describe implements prometheus.Collector.
func (c *serviceCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector.
func (c *serviceCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var stages kargo.StageList
	if err := c.reader.List(ctx, &stages, client.HasLabels{c.cfg.TargetLabel}); err != nil {
		ch <- prometheus.NewInvalidMetric(c.desc, fmt.Errorf("error listing target Stages: %w", err))
		return
	}
	now := c.clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	ratios := make(map[types.NamespacedName]float64, len(stages.Items))
	for i := range stages.Items {
		st := &stages.Items[i]
		ratios[types.NamespacedName{Namespace: st.Namespace, Name: st.Name}] =
			traffic.ErrorRatio(c.cfg.errorRatio(st.CurrentFreightNames()), c.incident)
	}
	c.meter.Advance(now, ratios)
	for i := range stages.Items {
		st := &stages.Items[i]
		counts, _ := c.meter.Counts(types.NamespacedName{Namespace: st.Namespace, Name: st.Name})
		id := st.Labels[c.cfg.TargetLabel]
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, counts.OK, st.Namespace, st.Name, id, "200")
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, counts.Failed, st.Namespace, st.Name, id, "500")
	}
}

// setIncident makes every target fail ratio more of its requests from now
// on, a fleet-wide incident that has nothing to do with any Freight.
func (c *serviceCollector) setIncident(ratio float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.incident = ratio
}

// serviceServer serves the service metrics of one collector on a
// listener it has opened.
type serviceServer struct {
	collector *serviceCollector
	ln        net.Listener
	srv       *http.Server
}

// listenServiceMetrics validates cfg (defaults applied) and listens on its
// address for the metrics of the target Stages reader lists.
func listenServiceMetrics(cfg ServiceMetrics, reader client.Reader, clk clock.PassiveClock) (*serviceServer, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("error configuring the service metrics: %w", err)
	}
	reg := prometheus.NewRegistry()
	collector := newServiceCollector(cfg, reader, clk)
	if err := reg.Register(collector); err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle(ServiceMetricsPath, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	ln, err := net.Listen("tcp", cfg.Address)
	if err != nil {
		return nil, fmt.Errorf("error listening for the service metrics on %s: %w", cfg.Address, err)
	}
	return &serviceServer{collector: collector, ln: ln,
		srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}}, nil
}

// address is the host:port the server listens on.
func (s *serviceServer) address() string { return s.ln.Addr().String() }

// serve serves the metrics until ctx is done.
func (s *serviceServer) serve(ctx context.Context) error {
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.srv.Shutdown(shutdown)
	}()
	if err := s.srv.Serve(s.ln); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("error serving the service metrics: %w", err)
	}
	return nil
}

// setupServiceMetrics listens on the configured address and serves the
// metrics while the manager runs.
func (s *Simulator) setupServiceMetrics(mgr ctrl.Manager) error {
	srv, err := listenServiceMetrics(s.opts.ServiceMetrics.withDefaults(), s.client, s.opts.Clock)
	if err != nil {
		return err
	}
	s.serviceCollector, s.metricsAddress = srv.collector, srv.address()
	return mgr.Add(manager.RunnableFunc(srv.serve))
}

// ServeServiceMetrics serves, until ctx is done, the service metrics of the
// target Stages reader lists, as a Simulator with Options.ServiceMetrics
// does, on the real clock, but without simulating anything of Kargo: for a
// fleet whose Stages something else writes (a test's fixture). It returns
// the host:port ServiceMetricsPath is served on.
func ServeServiceMetrics(ctx context.Context, reader client.Reader, cfg ServiceMetrics) (string, error) {
	srv, err := listenServiceMetrics(cfg.withDefaults(), reader, clock.RealClock{})
	if err != nil {
		return "", err
	}
	go func() { _ = srv.serve(ctx) }()
	return srv.address(), nil
}

// MetricsAddress is the host:port the service metrics are served on
// (Options.ServiceMetrics), once SetupWithManager ran; "" when they are
// not served.
func (s *Simulator) MetricsAddress() string { return s.metricsAddress }

// SetServiceIncident adds ratio (0 to 1) to the error ratio of every
// target's simulated service from its next scrape on, as a fleet-wide
// incident would; 0 ends it. It fails when the service metrics are not
// served.
func (s *Simulator) SetServiceIncident(ratio float64) error {
	if err := traffic.ValidateRatio(ratio); err != nil {
		return fmt.Errorf("incident error ratio: %w", err)
	}
	if s.serviceCollector == nil {
		return errors.New("the simulator serves no service metrics (Options.ServiceMetrics)")
	}
	s.serviceCollector.setIncident(ratio)
	return nil
}
