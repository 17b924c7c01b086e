package auditstore

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/audit"
)

// Read returns the sorted segments of a FleetStage's trail in namespace
// (every FleetStage's of the namespace when fleetStage is empty, sorted
// within each).
func Read(ctx context.Context, r client.Reader, namespace, fleetStage string) ([]fleetv1alpha1.FleetAuditSegment, error) {
	var list fleetv1alpha1.FleetAuditSegmentList
	opts := []client.ListOption{client.InNamespace(namespace)}
	if fleetStage != "" {
		opts = append(opts, client.MatchingLabels{fleetv1alpha1.FleetStageLabel: fleetStage})
	}
	if err := r.List(ctx, &list, opts...); err != nil {
		return nil, fmt.Errorf("error listing the audit segments of %s: %w", describe(namespace, fleetStage), err)
	}
	segs := list.Items
	if fleetStage != "" {
		// The label selects; the spec decides.
		segs = segs[:0]
		for _, s := range list.Items {
			if s.Spec.FleetStage == fleetStage {
				segs = append(segs, s)
			}
		}
	}
	audit.Sort(segs)
	return segs, nil
}

func describe(namespace, fleetStage string) string {
	if fleetStage == "" {
		return "namespace " + namespace
	}
	return "FleetStage " + namespace + "/" + fleetStage
}

// trail returns what the writer knows of k's trail, reading it when it
// knows nothing.
func (w *Writer) trail(ctx context.Context, k types.NamespacedName) (*trail, error) {
	if t, ok := w.trails[k]; ok {
		return t, nil
	}
	segs, err := Read(ctx, w.reader, k.Namespace, k.Name)
	if err != nil {
		return nil, err
	}
	t := &trail{keys: map[string]bool{}, head: audit.TrailHead(segs)}
	for i := range segs {
		t.segments = append(t.segments, audit.Summarize(&segs[i]))
		for _, r := range segs[i].Spec.Records {
			if r.Key != "" {
				t.keys[r.Key] = true
			}
		}
	}
	if n := len(segs); n > 0 {
		t.newest = segs[n-1].DeepCopy()
	}
	w.trails[k] = t
	return t, nil
}

// retain deletes the oldest segments of k's trail beyond the writer's
// retention, each time after recording that it does. Recording it may
// start a new segment, hence the loop.
func (w *Writer) retain(ctx context.Context, k types.NamespacedName) error {
	for range attempts {
		t := w.trails[k]
		if t == nil {
			return nil
		}
		drop, rec := audit.Retain(t.segments, w.keep, w.clock.Now())
		if rec == nil {
			return nil
		}
		left, err := w.appendOnce(ctx, k, []audit.Entry{{Namespace: k.Namespace, FleetStage: k.Name, AuditRecord: *rec}})
		if err != nil || len(left) > 0 {
			delete(w.trails, k)
			return err
		}
		for _, s := range drop {
			seg := &fleetv1alpha1.FleetAuditSegment{}
			seg.Namespace, seg.Name = k.Namespace, s.Name
			err := w.client.Delete(ctx, seg, client.Preconditions{UID: (*types.UID)(&s.UID)})
			if err != nil && !retriable(err) {
				delete(w.trails, k)
				return fmt.Errorf("error deleting audit segment %s beyond the retention: %w", s.Name, err)
			}
		}
		t.segments = t.segments[len(drop):]
	}
	return nil
}

// Head is the head of a FleetStage's trail the controller recorded in its
// status; nil when the FleetStage is gone or has none.
func Head(ctx context.Context, r client.Reader, namespace, fleetStage string) (*fleetv1alpha1.AuditHead, error) {
	fs := &fleetv1alpha1.FleetStage{}
	err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: fleetStage}, fs)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("error reading FleetStage %s/%s for its audit head: %w", namespace, fleetStage, err)
	}
	return fs.Status.Audit, nil
}
