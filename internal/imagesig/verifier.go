package imagesig

import (
	"context"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote"
	"k8s.io/utils/clock"

	"github.com/kargo-fleet/kargo-fleet/internal/policy"
)

const (
	// RetryInconclusive is how long an inconclusive result stands before
	// the registry is asked again.
	RetryInconclusive = 30 * time.Second
	// timeout bounds one image's verification, within the Promotion
	// guard's admission timeout (10 s by default).
	timeout = 5 * time.Second
	// maxResults bounds the results kept; past it they are forgotten and
	// verified again when needed.
	maxResults = 4096
)

// Verifier verifies images against signature requirements and remembers
// the results: a Verified or Failed one for good (an image is named by its
// digest, and a signature once checked does not change what it signs), an
// Inconclusive one for RetryInconclusive. Registries are asked anonymously.
// Safe for concurrent use.
type Verifier struct {
	clock clock.PassiveClock
	opts  []remote.Option
	mu    sync.Mutex
	seen  map[policy.SignatureKey]result
}

type result struct {
	policy.SignatureResult
	at time.Time
}

// Option configures a Verifier.
type Option func(*Verifier)

// WithClock sets the clock inconclusive results age by.
func WithClock(c clock.PassiveClock) Option { return func(v *Verifier) { v.clock = c } }

// WithRemoteOptions adds options to every registry request (a transport,
// credentials).
func WithRemoteOptions(opts ...remote.Option) Option {
	return func(v *Verifier) { v.opts = append(v.opts, opts...) }
}

// NewVerifier returns a Verifier.
func NewVerifier(opts ...Option) *Verifier {
	// A registry answering 5xx is asked once more, not for seconds: the
	// caller (a reconcile, an admission) is waiting, and an inconclusive
	// result is retried after RetryInconclusive anyway.
	v := &Verifier{clock: clock.RealClock{},
		opts: []remote.Option{remote.WithRetryBackoff(remote.Backoff{Duration: 100 * time.Millisecond, Factor: 2, Steps: 2})}}
	for _, o := range opts {
		o(v)
	}
	return v
}

// Verify checks img against req, or returns what it found before.
func (v *Verifier) Verify(ctx context.Context, img *policy.Image, req *policy.Requirement) policy.SignatureResult {
	key := policy.SignatureKey{Image: policy.ImageRef(img), KeyID: req.KeyID, BuilderID: req.BuilderID}
	v.mu.Lock()
	r, ok := v.seen[key]
	v.mu.Unlock()
	if ok && (r.Outcome != policy.Inconclusive || v.clock.Since(r.at) < RetryInconclusive) {
		return r.SignatureResult
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	r = result{SignatureResult: verify(ctx, img, req, v.opts), at: v.clock.Now()}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.seen == nil || len(v.seen) >= maxResults {
		v.seen = map[policy.SignatureKey]result{}
	}
	v.seen[key] = r
	return r.SignatureResult
}

// Freight verifies every image of freight against every requirement: the
// facts policy.Check decides signature requirements on.
func (v *Verifier) Freight(ctx context.Context, freight *policy.Freight, reqs []policy.Requirement) policy.Signatures {
	if len(reqs) == 0 {
		return nil
	}
	out := policy.Signatures{}
	for i := range reqs {
		for j := range freight.Images {
			out.Set(&freight.Images[j], &reqs[i], v.Verify(ctx, &freight.Images[j], &reqs[i]))
		}
	}
	return out
}
