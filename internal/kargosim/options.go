package kargosim

import (
	"net/http"
	"regexp"
	"time"

	"k8s.io/utils/clock"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// Defaults of Options; each is Kargo v1.11.2's own figure.
const (
	// DefaultPollFloor is Kargo's floor on a step's suggested poll interval.
	DefaultPollFloor = 10 * time.Second
	// DefaultVerifiedInDelay approximates how long after a Promotion
	// succeeds Kargo marks its Freight verified in the Stage (observed
	// 100-150 ms).
	DefaultVerifiedInDelay = 120 * time.Millisecond
	// DefaultMaxConcurrentReconciles is Kargo's promotion worker count.
	DefaultMaxConcurrentReconciles = 4
	// DefaultStageResync is how often Kargo reconciles a Stage anyway.
	DefaultStageResync = 5 * time.Minute
	// DefaultControlPlaneUsers matches the Kargo control-plane service
	// accounts, whose Promotions carry no create-actor annotation.
	DefaultControlPlaneUsers = `^system:serviceaccount:kargo:(kargo-api|kargo-controller|kargo-management-controller)$`
)

// Options tune the simulator. The zero value is faithful to Kargo v1.11.2;
// tests may shorten PollFloor and VerifiedInDelay explicitly.
type Options struct {
	// Clock drives every delay and timestamp (default: the real clock).
	Clock clock.WithTicker
	// PollFloor is the shortest interval at which a Running step is re-run
	// (default DefaultPollFloor, Kargo's 10 s). Lower it only in tests: real
	// Kargo never polls faster than 10 s.
	PollFloor time.Duration
	// VerifiedInDelay is how long after a Promotion succeeds the Stage
	// controller writes the Freight's verifiedIn (default
	// DefaultVerifiedInDelay). A Promotion downstream created in that gap is
	// refused, as on real Kargo.
	VerifiedInDelay time.Duration
	// MaxConcurrentReconciles is the number of Promotion workers (default 4).
	MaxConcurrentReconciles int
	// MaxConcurrentStageReconciles is the number of Stage workers (default
	// 1). A new Freight reconciles every Stage of its Project, so a Project
	// with hundreds of Stages (a large fleet) needs more.
	MaxConcurrentStageReconciles int
	// StageResync is the Stage controller's periodic resync (default 5 min):
	// a change of the ProjectConfig takes effect at the next resync unless
	// the Stage gets the refresh annotation.
	StageResync time.Duration
	// Seed fixes the random draws of the failure-rate knob.
	Seed int64
	// ControlPlaneUsers matches the user names whose Promotions are the
	// control plane's (no create-actor annotation); default
	// DefaultControlPlaneUsers.
	ControlPlaneUsers *regexp.Regexp
	// HTTPTransport sends the http step's requests (default: a clone of
	// http.DefaultTransport).
	HTTPTransport http.RoundTripper
	// Shards are the Kargo shards with a simulated controller of their own
	// (Kargo's SHARD_NAME), besides the default controller, which always
	// runs and takes the Stages and Promotions without a shard. The Stages
	// and Promotions of a shard without a controller are not reconciled:
	// their Promotions stay Pending and the Stages get no status.
	Shards []string
	// KargoNamespace is Kargo's namespace (its controllers'
	// KARGO_NAMESPACE), where each simulated controller keeps its heartbeat
	// Lease (default kargo.DefaultNamespace).
	KargoNamespace string
	// HeartbeatTTL is the duration of the heartbeat Leases, renewed every
	// third of it (default kargo.DefaultHeartbeatTTL, Kargo's 120 s; the
	// controller's HEARTBEAT_TTL_SECONDS). Tests may shorten it.
	HeartbeatTTL time.Duration
	// ServiceMetrics, when set, serves Prometheus metrics of the service
	// each target Stage runs, its error ratio following the Freight the
	// Stage runs (none by default).
	ServiceMetrics *ServiceMetrics
}

func (o Options) withDefaults() Options {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.PollFloor <= 0 {
		o.PollFloor = DefaultPollFloor
	}
	if o.VerifiedInDelay <= 0 {
		o.VerifiedInDelay = DefaultVerifiedInDelay
	}
	if o.MaxConcurrentReconciles <= 0 {
		o.MaxConcurrentReconciles = DefaultMaxConcurrentReconciles
	}
	if o.MaxConcurrentStageReconciles <= 0 {
		o.MaxConcurrentStageReconciles = 1
	}
	if o.StageResync <= 0 {
		o.StageResync = DefaultStageResync
	}
	if o.ControlPlaneUsers == nil {
		o.ControlPlaneUsers = regexp.MustCompile(DefaultControlPlaneUsers)
	}
	if o.KargoNamespace == "" {
		o.KargoNamespace = kargo.DefaultNamespace
	}
	if o.HeartbeatTTL <= 0 {
		o.HeartbeatTTL = kargo.DefaultHeartbeatTTL
	}
	if o.HTTPTransport == nil {
		o.HTTPTransport = http.DefaultTransport.(*http.Transport).Clone()
	}
	return o
}
