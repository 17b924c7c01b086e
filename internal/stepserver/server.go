package stepserver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/kargo-fleet/kargo-fleet/internal/stagerecord"
	"github.com/kargo-fleet/kargo-fleet/internal/steptoken"
	"github.com/kargo-fleet/kargo-fleet/steps"
)

// Defaults of the step server.
const (
	// DefaultAddr is where the step server listens.
	DefaultAddr = ":9090"
	// DefaultMaxBodyBytes bounds a request body.
	DefaultMaxBodyBytes = 64 << 10
	// defaultNamespace is the controller's namespace when nothing says it.
	defaultNamespace = "kargo-fleet"
	// shutdownGrace is how long in-flight requests may finish on shutdown.
	shutdownGrace = 10 * time.Second
)

// Environment variables read by OptionsFromEnv.
const (
	// EnvAddr is the listen address; "0" disables the server.
	EnvAddr = "KARGO_FLEET_STEP_SERVER_ADDR"
	// EnvTLSCertFile and EnvTLSKeyFile enable TLS when both are set.
	EnvTLSCertFile = "KARGO_FLEET_STEP_TLS_CERT_FILE"
	// EnvTLSKeyFile is the TLS private key file.
	EnvTLSKeyFile = "KARGO_FLEET_STEP_TLS_KEY_FILE"
	// EnvSigningKeyFile is a file holding the token signing key; when unset
	// the key is kept in a Secret of the controller's namespace.
	EnvSigningKeyFile = "KARGO_FLEET_STEP_SIGNING_KEY_FILE"
	// EnvSigningKeySecret names that Secret.
	EnvSigningKeySecret = "KARGO_FLEET_STEP_SIGNING_KEY_SECRET"
	// EnvMaxBodyBytes bounds request bodies.
	EnvMaxBodyBytes = "KARGO_FLEET_STEP_MAX_BODY_BYTES"
	// EnvPodNamespace is the controller's namespace (downward API).
	EnvPodNamespace = "POD_NAMESPACE"
)

// Options configures the step server.
type Options struct {
	// Addr is the listen address; empty or "0" disables the server.
	Addr string
	// TLSCertFile and TLSKeyFile enable TLS when both are set.
	TLSCertFile string
	// TLSKeyFile is the TLS private key file.
	TLSKeyFile string
	// SigningKeyFile holds the token signing key; when empty the key lives
	// in SigningKeySecret.
	SigningKeyFile string
	// SigningKeySecret is the Secret holding the signing key.
	SigningKeySecret types.NamespacedName
	// MaxBodyBytes bounds a request body.
	MaxBodyBytes int64
}

// Enabled reports whether the server should run.
func (o Options) Enabled() bool { return o.Addr != "" && o.Addr != "0" }

// OptionsFromEnv reads the server options from the environment (see
// the Env* constants), with defaults.
func OptionsFromEnv() (Options, error) {
	ns := os.Getenv(EnvPodNamespace)
	if ns == "" {
		if raw, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace"); err == nil {
			ns = strings.TrimSpace(string(raw))
		}
	}
	if ns == "" {
		ns = defaultNamespace
	}
	o := Options{
		Addr:           envOr(EnvAddr, DefaultAddr),
		TLSCertFile:    os.Getenv(EnvTLSCertFile),
		TLSKeyFile:     os.Getenv(EnvTLSKeyFile),
		SigningKeyFile: os.Getenv(EnvSigningKeyFile),
		SigningKeySecret: types.NamespacedName{
			Namespace: ns, Name: envOr(EnvSigningKeySecret, steptoken.DefaultSigningKeySecret),
		},
		MaxBodyBytes: DefaultMaxBodyBytes,
	}
	if v := os.Getenv(EnvMaxBodyBytes); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1024 {
			return o, fmt.Errorf("%s must be a number of bytes >= 1024, got %q", EnvMaxBodyBytes, v)
		}
		o.MaxBodyBytes = n
	}
	if (o.TLSCertFile == "") != (o.TLSKeyFile == "") {
		return o, fmt.Errorf("set both %s and %s to serve TLS, or neither", EnvTLSCertFile, EnvTLSKeyFile)
	}
	return o, nil
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// Deps are the step server's collaborators.
type Deps struct {
	// Reader reads Promotions and Stages to authorize requests; use an
	// uncached reader (the manager's API reader): a Promotion must be seen
	// Running the moment Kargo calls.
	Reader client.Reader
	// FleetStages reads FleetStages; nil means Reader. Use the manager's
	// cache: a FleetStage of 10,000 inline targets is megabytes, and every
	// poll of every step would read it from the API server. Steps never
	// modify the FleetStage they get, so the cache's object is shared.
	FleetStages client.Reader
	// Keys provides the token signing keys.
	Keys steptoken.KeySource
	// Namespaces reads Project namespaces for token revocations; nil uses
	// Reader. The manager's cache is fine: a revocation applies as soon as
	// the watch sees it.
	Namespaces client.Reader
	// StageRecords reads the records of the Stages FleetStages generated;
	// nil reads them with Reader. Share the controller's: records are
	// immutable and kept decoded.
	StageRecords *stagerecord.Reader
	// Steps are the steps served.
	Steps steps.Registry
	// Metrics registers the server's metrics; nil registers none.
	Metrics prometheus.Registerer
	// Clock times requests.
	Clock clock.PassiveClock
}

// Server is the step server: POST /v1/steps/<name> with a JSON Request,
// answered with a JSON Response. It runs in every replica of the
// controller (a refused connection fails a Kargo step at once), so it is a
// manager.Runnable that needs no leader election. Handlers record intent and
// read state: they answer quickly, and a replayed request has no further
// effect.
type Server struct {
	opts        Options
	reader      client.Reader
	fleetStages client.Reader
	namespaces  client.Reader
	records     *stagerecord.Reader
	keys        steptoken.KeySource
	steps       steps.Registry
	metrics     *serverMetrics
	clock       clock.PassiveClock
}

var (
	_ manager.Runnable               = (*Server)(nil)
	_ manager.LeaderElectionRunnable = (*Server)(nil)
)

// New returns a step server.
func New(opts Options, deps Deps) *Server {
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	clk := deps.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	fleetStages := deps.FleetStages
	if fleetStages == nil {
		fleetStages = deps.Reader
	}
	namespaces := deps.Namespaces
	if namespaces == nil {
		namespaces = deps.Reader
	}
	records := deps.StageRecords
	if records == nil {
		records = stagerecord.NewReader(deps.Reader)
	}
	return &Server{
		opts:        opts,
		reader:      deps.Reader,
		fleetStages: fleetStages,
		namespaces:  namespaces,
		records:     records,
		keys:        deps.Keys,
		steps:       deps.Steps,
		metrics:     newServerMetrics(deps.Metrics),
		clock:       clk,
	}
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: every
// replica serves steps.
func (s *Server) NeedLeaderElection() bool { return false }

// Start implements manager.Runnable: it serves until ctx is done.
func (s *Server) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("step-server")
	if _, err := s.keys.SigningKeys(ctx); err != nil {
		return fmt.Errorf("error loading step signing key: %w", err)
	}
	ln, err := net.Listen("tcp", s.opts.Addr)
	if err != nil {
		return fmt.Errorf("error listening on %s: %w", s.opts.Addr, err)
	}
	base := log.IntoContext(context.WithoutCancel(ctx), logger)
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       90 * time.Second,
		MaxHeaderBytes:    16 << 10,
		BaseContext:       func(net.Listener) context.Context { return base },
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-ctx.Done()
		shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
		defer cancel()
		if err := srv.Shutdown(shutdownCtx); err != nil {
			logger.Error(err, "Error shutting down the step server")
		}
	}()
	serveTLS := s.opts.TLSCertFile != ""
	if serveTLS {
		// The certificate is renewed in place (a generated one, or a
		// mounted Secret that its issuer rotates): the watcher serves the
		// files' current content without a restart.
		cw, err := certwatcher.New(s.opts.TLSCertFile, s.opts.TLSKeyFile)
		if err != nil {
			_ = ln.Close()
			return fmt.Errorf("error loading the step server certificate: %w", err)
		}
		go func() {
			if err := cw.Start(ctx); err != nil {
				logger.Error(err, "Error watching the step server certificate")
			}
		}()
		srv.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: cw.GetCertificate}
	}
	logger.Info("Serving steps", "addr", ln.Addr().String(), "tls", serveTLS, "steps", s.steps.Names())
	if serveTLS {
		err = srv.ServeTLS(ln, "", "")
	} else {
		err = srv.Serve(ln)
	}
	if errors.Is(err, http.ErrServerClosed) {
		<-done
		return nil
	}
	return fmt.Errorf("error serving steps: %w", err)
}
