package kargosim

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// freightStatusFlushInterval is the longest a queued Freight status entry
// waits before it is written: within the 100-150 ms Kargo takes to record
// verifiedIn after a Promotion succeeds.
const freightStatusFlushInterval = 30 * time.Millisecond

// maxFreightStatusBackoff bounds the wait between attempts while Freight
// status patches fail (e.g. a Freight grown past the apiserver's limit).
const maxFreightStatusBackoff = 5 * time.Second

// freightStatusWriter writes the Stage controller's per-Stage Freight
// status entries (currentlyIn, verifiedIn). Each Stage owns its own key in
// those maps, so entries queued for one Freight by many Stages are merged
// into one JSON merge patch per flush instead of one patch each. A Freight
// promoted to thousands of target Stages carries thousands of entries, and
// every patch rewrites (and every watcher receives) the whole object: one
// patch per Stage would make the simulator, not the system under test, the
// limit of a large fleet. What an observer sees is unchanged: each entry
// appears one flush interval after the Stage decided it (30 ms, longer
// only when patches of a large Freight are slow), and a flush that takes
// longer simply collects more entries for the next one.
type freightStatusWriter struct {
	client   client.Client
	interval time.Duration

	mu sync.Mutex
	// pending is Freight → status field → Stage → entry; a nil entry
	// deletes the Stage's key.
	pending map[types.NamespacedName]map[string]map[string]map[string]any
	wake    chan struct{}
}

func newFreightStatusWriter(c client.Client, interval time.Duration) *freightStatusWriter {
	return &freightStatusWriter{
		client:   c,
		interval: interval,
		pending:  map[types.NamespacedName]map[string]map[string]map[string]any{},
		wake:     make(chan struct{}, 1),
	}
}

// Freight status fields the writer maintains.
const (
	fieldCurrentlyIn = "currentlyIn"
	fieldVerifiedIn  = "verifiedIn"
)

// set queues fields of the Stage's entry under the given status field; they
// merge into what is already there (and into what is already queued).
func (w *freightStatusWriter) set(fr *kargo.Freight, field, stage string, entry map[string]any) {
	w.queue(fr, field, stage, func(cur map[string]any) map[string]any {
		if cur == nil {
			cur = map[string]any{}
		}
		maps.Copy(cur, entry)
		return cur
	})
}

// leave queues the removal of the Stage's currentlyIn entry (verifiedIn
// entries are never removed).
func (w *freightStatusWriter) leave(fr *kargo.Freight, stage string) {
	w.queue(fr, fieldCurrentlyIn, stage, func(map[string]any) map[string]any { return nil })
}

func (w *freightStatusWriter) queue(fr *kargo.Freight, field, stage string, change func(map[string]any) map[string]any) {
	key := types.NamespacedName{Namespace: fr.Namespace, Name: fr.Name}
	w.mu.Lock()
	fields := w.pending[key]
	if fields == nil {
		fields = map[string]map[string]map[string]any{}
		w.pending[key] = fields
	}
	stages := fields[field]
	if stages == nil {
		stages = map[string]map[string]any{}
		fields[field] = stages
	}
	// After a queued removal cur is nil, so a new entry starts afresh.
	stages[stage] = change(stages[stage])
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Start runs the flush loop until the context ends; it makes the writer a
// manager Runnable.
func (w *freightStatusWriter) Start(ctx context.Context) error {
	var backoff, took time.Duration
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-w.wake:
		}
		// Let the entries decided together arrive together. The larger
		// the Freight, the longer a patch takes and the more entries the
		// next one carries: patches of Freight held by thousands of Stages
		// never take more than about a fifth of the apiserver's time.
		// After failed patches, back off as a controller's rate limiter
		// would.
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(max(w.interval, 4*took) + backoff):
		}
		start := time.Now()
		ok := w.flush(ctx)
		took = time.Since(start)
		if ok {
			backoff = 0
		} else {
			backoff = min(max(2*backoff, w.interval), maxFreightStatusBackoff)
		}
	}
}

// flush writes everything queued, one patch per Freight, and reports
// whether every patch was taken. A failed patch is queued again under
// anything newer and retried at the next flush; a Freight that is gone
// takes its entries with it.
func (w *freightStatusWriter) flush(ctx context.Context) bool {
	ok := true
	w.mu.Lock()
	batch := w.pending
	w.pending = map[types.NamespacedName]map[string]map[string]map[string]any{}
	w.mu.Unlock()
	for key, fields := range batch {
		err := w.patch(ctx, key, fields)
		switch {
		case err == nil, apierrors.IsNotFound(err):
		default:
			logger(ctx).Error(err, "Error writing Freight status; retrying", "freight", key.Name, "namespace", key.Namespace)
			w.requeue(key, fields)
			ok = false
		}
	}
	return ok
}

func (w *freightStatusWriter) patch(ctx context.Context, key types.NamespacedName, fields map[string]map[string]map[string]any) error {
	status := map[string]any{}
	for field, stages := range fields {
		entries := make(map[string]any, len(stages))
		for stage, entry := range stages {
			if entry == nil {
				entries[stage] = nil // JSON null deletes the key
			} else {
				entries[stage] = entry
			}
		}
		status[field] = entries
	}
	body, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		return err
	}
	fr := &kargo.Freight{}
	fr.Namespace, fr.Name = key.Namespace, key.Name
	if err := w.client.Status().Patch(ctx, fr, client.RawPatch(types.MergePatchType, body)); err != nil {
		return fmt.Errorf("error patching status of Freight %q in namespace %q: %w", key.Name, key.Namespace, err)
	}
	return nil
}

// requeue puts a failed batch back, under any entry queued since: a newer
// removal wins, newer fields of an entry win over the failed ones.
func (w *freightStatusWriter) requeue(key types.NamespacedName, fields map[string]map[string]map[string]any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	cur := w.pending[key]
	if cur == nil {
		w.pending[key] = fields
	} else {
		for field, stages := range fields {
			if cur[field] == nil {
				cur[field] = stages
				continue
			}
			for stage, entry := range stages {
				newer, queued := cur[field][stage]
				switch {
				case !queued:
					cur[field][stage] = entry
				case newer != nil && entry != nil:
					merged := maps.Clone(entry)
					maps.Copy(merged, newer)
					cur[field][stage] = merged
				}
			}
		}
	}
	select {
	case w.wake <- struct{}{}:
	default:
	}
}
