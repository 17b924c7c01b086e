// Package auditstore appends decisions to FleetStages' audit trails
// (FleetAuditSegments) and reads trails back. The layout, the hash chain
// and verification are internal/audit's; this package does the API calls.
package auditstore

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/audit"
)

// Defaults of a Writer.
const (
	// DefaultKeep is how many segments a trail keeps: 20 × 256 = 5,120
	// records per FleetStage, about 2.3 MB in etcd (docs/audit.md).
	DefaultKeep = 20
	// flushEvery is how long a decision waits at most before it is
	// written: records of one reconcile go out in one write.
	flushEvery = 500 * time.Millisecond
	// queueSize bounds the decisions waiting to be written; a full queue
	// drops (and counts) new ones rather than stall a reconcile or an
	// admission.
	queueSize = 8192
	// attempts bounds the retries of one batch after conflicts with another
	// writer (a second replica's webhook).
	attempts = 6
	// writeTimeout bounds one flush.
	writeTimeout = 30 * time.Second
)

// Writer appends records to the trails. Record never blocks; a background
// loop writes what was recorded, in order, every flushEvery. Every replica
// runs one: the admission webhooks record too, and writes from two replicas
// meet as conflicts on the newest segment, which the loser retries after
// reading the trail again.
type Writer struct {
	client  client.Client
	reader  client.Reader
	clock   clock.PassiveClock
	keep    int
	queue   chan audit.Entry
	trails  map[types.NamespacedName]*trail
	pending map[types.NamespacedName][]audit.Entry
	// failing holds when each trail whose last write failed is tried again.
	failing map[types.NamespacedName]retry
	log     logr.Logger
	flushed chan chan struct{}
}

// trail is what the writer knows of one FleetStage's trail: rebuilt from the
// API server when it first writes to it and after a conflict.
type trail struct {
	newest   *fleetv1alpha1.FleetAuditSegment
	segments []audit.Summary
	head     audit.Head
	keys     map[string]bool
}

// NewWriter returns a writer that writes with c and reads trails with r
// (uncached: a trail is read once, then followed), keeping keep segments
// per FleetStage.
func NewWriter(c client.Client, r client.Reader, clk clock.PassiveClock, keep int, log logr.Logger) *Writer {
	if keep <= 0 {
		keep = DefaultKeep
	}
	return &Writer{client: c, reader: r, clock: clk, keep: keep, log: log,
		queue: make(chan audit.Entry, queueSize), trails: map[types.NamespacedName]*trail{},
		pending: map[types.NamespacedName][]audit.Entry{}, failing: map[types.NamespacedName]retry{},
		flushed: make(chan chan struct{})}
}

var _ audit.Sink = &Writer{}

// Record queues e; it is written within flushEvery.
func (w *Writer) Record(e audit.Entry) {
	if e.Time.IsZero() {
		e.Time.Time = w.clock.Now()
	}
	select {
	case w.queue <- e:
	default:
		recordsDropped.Inc()
		w.log.Info("Audit queue full: a decision is not recorded in the audit trail", "namespace", e.Namespace,
			"fleetStage", e.FleetStage, "action", e.Action)
	}
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: every
// replica records what its webhooks decided.
func (w *Writer) NeedLeaderElection() bool { return false }

// Start writes recorded decisions until ctx ends, then writes what is left.
func (w *Writer) Start(ctx context.Context) error {
	tick := time.NewTicker(flushEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			w.drain()
			flush, cancel := context.WithTimeout(context.Background(), writeTimeout)
			w.flush(flush)
			cancel()
			return nil
		case <-tick.C:
			w.drain()
			w.flushWithTimeout(ctx)
		case done := <-w.flushed:
			w.drain()
			w.flushWithTimeout(ctx)
			close(done)
		}
	}
}

// Flush writes everything recorded before it was called, then returns;
// it returns early when ctx ends. Tests and shutdown use it.
func (w *Writer) Flush(ctx context.Context) {
	done := make(chan struct{})
	select {
	case w.flushed <- done:
	case <-ctx.Done():
		return
	}
	select {
	case <-done:
	case <-ctx.Done():
	}
}

func (w *Writer) flushWithTimeout(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	w.flush(ctx)
}

// drain moves the queue into the pending batches, by FleetStage.
func (w *Writer) drain() {
	for {
		select {
		case e := <-w.queue:
			k := types.NamespacedName{Namespace: e.Namespace, Name: e.FleetStage}
			w.pending[k] = append(w.pending[k], e)
		default:
			return
		}
	}
}

// maxPending bounds the records kept for a trail the API server refuses.
const maxPending = 4 * fleetv1alpha1.MaxAuditRecordsPerSegment

// retry is when a failing trail is written again, backing off.
type retry struct {
	at    time.Time
	delay time.Duration
}

// maxRetryDelay bounds the backoff of a trail the API server refuses.
const maxRetryDelay = 30 * time.Second

func (w *Writer) flush(ctx context.Context) {
	now := w.clock.Now()
	for k, entries := range w.pending {
		if r, ok := w.failing[k]; ok && now.Before(r.at) {
			continue
		}
		left, err := w.append(ctx, k, entries)
		if err != nil {
			writeErrors.Inc()
			r := w.failing[k]
			r.delay = min(max(2*r.delay, flushEvery), maxRetryDelay)
			r.at = now.Add(r.delay)
			w.failing[k] = r
			w.log.Error(err, "Writing the audit trail failed; retrying", "namespace", k.Namespace, "fleetStage", k.Name,
				"records", len(left), "in", r.delay.String())
		} else {
			delete(w.failing, k)
		}
		if over := len(left) - maxPending; over > 0 {
			recordsDropped.Add(float64(over))
			left = left[over:]
		}
		if len(left) == 0 {
			delete(w.pending, k)
		} else {
			w.pending[k] = left
		}
	}
}

// append writes entries to k's trail and keeps it within its retention; it
// returns the entries not written.
func (w *Writer) append(ctx context.Context, k types.NamespacedName, entries []audit.Entry) ([]audit.Entry, error) {
	var err error
	for range attempts {
		if entries, err = w.appendOnce(ctx, k, entries); err == nil || !retriable(err) {
			break
		}
		delete(w.trails, k)
	}
	if err != nil {
		return entries, err
	}
	return nil, w.retain(ctx, k)
}

func retriable(err error) bool {
	return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) || apierrors.IsNotFound(err)
}

// appendOnce writes entries after the trail's head as the writer knows it;
// it returns the entries not written, and an error when some are left.
func (w *Writer) appendOnce(ctx context.Context, k types.NamespacedName, entries []audit.Entry) ([]audit.Entry, error) {
	t, err := w.trail(ctx, k)
	if err != nil {
		return entries, err
	}
	entries = t.unseen(entries)
	if len(entries) == 0 {
		return nil, nil
	}
	records := make([]fleetv1alpha1.AuditRecord, len(entries))
	for i := range entries {
		records[i] = entries[i].AuditRecord
	}
	previous := t.head.Hash
	head := audit.Chain(t.head, records)
	plan := audit.PlanAppend(k.Namespace, k.Name, t.newest, previous, records)
	if plan.Update != nil {
		if err := w.client.Update(ctx, plan.Update); err != nil {
			return entries, fmt.Errorf("error appending to audit segment %s: %w", plan.Update.Name, err)
		}
		n := len(plan.Update.Spec.Records) - len(t.newest.Spec.Records)
		t.wrote(plan.Update, entries[:n])
		entries = entries[n:]
	}
	for _, s := range plan.Create {
		if err := w.client.Create(ctx, s); err != nil {
			return entries, fmt.Errorf("error creating audit segment %s: %w", s.Name, err)
		}
		t.segments = append(t.segments, audit.Summary{})
		t.wrote(s, entries[:len(s.Spec.Records)])
		entries = entries[len(s.Spec.Records):]
	}
	recordsWritten.Add(float64(len(records)))
	w.patchHead(ctx, k, head)
	return nil, nil
}

// wrote records that s, the trail's newest segment now, holds entries.
func (t *trail) wrote(s *fleetv1alpha1.FleetAuditSegment, entries []audit.Entry) {
	t.newest = s
	t.segments[len(t.segments)-1] = audit.Summarize(s)
	t.head = t.segments[len(t.segments)-1].Last
	for i := range entries {
		if entries[i].Key != "" {
			t.keys[entries[i].Key] = true
		}
	}
}

// unseen are the entries whose decision the trail does not hold yet: a
// keyed decision (an approval, a break-glass Promotion) is recorded once.
func (t *trail) unseen(entries []audit.Entry) []audit.Entry {
	out := entries[:0:0]
	batch := map[string]bool{}
	for _, e := range entries {
		if e.Key != "" && (t.keys[e.Key] || batch[e.Key]) {
			continue
		}
		batch[e.Key] = e.Key != ""
		out = append(out, e)
	}
	return out
}

// patchHead writes the trail's head into the FleetStage's status. A
// FleetStage that is gone keeps no head: its trail stays, verified without
// one.
func (w *Writer) patchHead(ctx context.Context, k types.NamespacedName, head audit.Head) {
	fs := &fleetv1alpha1.FleetStage{}
	fs.Namespace, fs.Name = k.Namespace, k.Name
	patch := fmt.Sprintf(`{"status":{"audit":{"sequence":%d,"hash":%q,"time":%q}}}`, head.Sequence, head.Hash,
		w.clock.Now().UTC().Format("2006-01-02T15:04:05.000000Z07:00"))
	err := w.client.Status().Patch(ctx, fs, client.RawPatch(types.MergePatchType, []byte(patch)))
	if err != nil && !apierrors.IsNotFound(err) {
		w.log.Info("Recording the audit trail's head in the FleetStage's status failed", "namespace", k.Namespace,
			"fleetStage", k.Name, "error", err.Error())
	}
}
