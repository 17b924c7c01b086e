package steps

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetrollout"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/rolloutstore"
)

// APIStore implements Store on the API server. It reads through an uncached
// reader so that a replayed request sees what the previous one wrote, on any
// replica; the handful of reads per step request is cheap next to Kargo's
// 10 s poll interval.
//
// +kubebuilder:rbac:groups=fleet.kargo-fleet.io,resources=fleetrollouts,verbs=get;list;create;patch
// +kubebuilder:rbac:groups=kargo.akuity.io,resources=freights,verbs=get
type APIStore struct {
	writer client.Client
	reader client.Reader
	// approvals reads Freight for their approvals; nil means reader.
	approvals client.Reader
}

var _ Store = (*APIStore)(nil)

// NewAPIStore returns a Store that writes with c and reads with r (use the
// manager's API reader, not its cache).
func NewAPIStore(c client.Client, r client.Reader) *APIStore {
	return &APIStore{writer: c, reader: r}
}

// GetRollout implements FleetReader.
func (s *APIStore) GetRollout(ctx context.Context, namespace, name string) (*fleetv1alpha1.FleetRollout, error) {
	var ro fleetv1alpha1.FleetRollout
	if err := s.reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &ro); err != nil {
		return nil, fmt.Errorf("error getting FleetRollout %q: %w", name, err)
	}
	return &ro, nil
}

// WithApprovalsFrom makes the store read Freight approvals through r: the
// manager's cache, whose Freight keep their approvals but not the per-Stage
// maps that make a Freight of a 10,000-target fleet a megabyte. A gate's
// poll then reads no Freight from the API server.
func (s *APIStore) WithApprovalsFrom(r client.Reader) *APIStore {
	s.approvals = r
	return s
}

// GetFreightApprovals implements FleetReader.
func (s *APIStore) GetFreightApprovals(ctx context.Context, namespace, name string) (*kargo.Freight, error) {
	if s.approvals == nil {
		return s.GetFreight(ctx, namespace, name)
	}
	var f kargo.Freight
	if err := s.approvals.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &f); err != nil {
		return nil, fmt.Errorf("error getting Freight %q: %w", name, err)
	}
	return &f, nil
}

// GetFreight implements FleetReader.
func (s *APIStore) GetFreight(ctx context.Context, namespace, name string) (*kargo.Freight, error) {
	var f kargo.Freight
	if err := s.reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &f); err != nil {
		return nil, fmt.Errorf("error getting Freight %q: %w", name, err)
	}
	return &f, nil
}

// RolloutRecords implements FleetReader.
func (s *APIStore) RolloutRecords(ctx context.Context, fs *fleetv1alpha1.FleetStage, named string) ([]*fleetv1alpha1.FleetRollout, error) {
	return rolloutstore.RollbackRecords(ctx, s.reader, fs, named)
}

// EnsureRollout implements Intents.
func (s *APIStore) EnsureRollout(ctx context.Context, req RolloutRequest) (*fleetv1alpha1.FleetRollout, error) {
	fs := req.FleetStage
	var list fleetv1alpha1.FleetRolloutList
	if err := s.reader.List(ctx, &list, client.InNamespace(fs.Namespace), client.MatchingLabels{
		fleetv1alpha1.FleetStageLabel: fs.Name,
		fleetv1alpha1.FreightLabel:    fleetrollout.FreightLabelValue(req.Freight.Name),
	}); err != nil {
		return nil, fmt.Errorf("error listing FleetRollouts of FleetStage %q: %w", fs.Name, err)
	}
	var open, all []*fleetv1alpha1.FleetRollout
	var finished *fleetv1alpha1.FleetRollout
	for i := range list.Items {
		ro := &list.Items[i]
		if ro.Spec.FleetStage != fs.Name || ro.Spec.Freight.Name != req.Freight.Name ||
			ro.Spec.Direction != fleetv1alpha1.DirectionForward || ro.DeletionTimestamp != nil {
			continue
		}
		if recordsRequest(ro, req.Context) {
			// This Promotion already asked this rollout: report on it, even
			// when it has finished since (the last wave's step polls once more
			// after the rollout is final).
			return ro, nil
		}
		all = append(all, ro)
		switch {
		case !ro.Status.Phase.IsFinal():
			open = append(open, ro)
		case finished == nil || fleetrollout.Compare(finished, ro) < 0:
			finished = ro
		}
	}
	if len(open) > 0 {
		slices.SortFunc(open, fleetrollout.Compare)
		return open[0], nil
	}
	if held := fleetrollout.HeldBack(fs, all, req.Freight.Name); held != nil {
		return nil, &HeldBackError{FleetStage: fs.Name, Freight: req.Freight.Name, Rollout: held.Name}
	}
	if !req.FirstWave && finished != nil {
		// A later wave Stage promoted again once the rollout had finished:
		// its outcome stands, and only the first wave starts a rollout.
		return finished, nil
	}

	ro := fleetrollout.NewForward(fleetrollout.Forward{
		Namespace: fs.Namespace, FleetStage: fs.Name, Freight: req.Freight,
		Promotion: req.Context.Promotion, Alias: req.Context.Alias, Actor: req.Context.Actor, Wave: req.Wave,
	})
	if rec := fleetrollout.Deleted(fs, ro.Name); rec != nil {
		// Deleting a rollout aborts it for good: this Promotion's step
		// would otherwise start it again on its next poll.
		return nil, &TerminalError{Err: fmt.Errorf("FleetRollout %s, started by this Promotion, was deleted and is recorded as %s "+
			"in FleetStage %s's history: a deleted rollout does not start again; promote the Freight into wave Stage %s "+
			"again to start a new rollout", ro.Name, rec.Phase, fs.Name, req.Context.Stage)}
	}
	err := s.writer.Create(ctx, ro)
	switch {
	case err == nil:
		log.FromContext(ctx).V(0).Info("Created FleetRollout", "FleetRollout", client.ObjectKeyFromObject(ro),
			"direction", ro.Spec.Direction, "freight", ro.Spec.Freight.Name, "stepKey", req.Context.Key())
		return ro, nil
	case apierrors.IsAlreadyExists(err):
		// The same request created it before (a replay after a crash, or on
		// another replica): the deterministic name makes this the same rollout.
		return s.GetRollout(ctx, ro.Namespace, ro.Name)
	default:
		return nil, fmt.Errorf("error creating FleetRollout %q: %w", ro.Name, err)
	}
}

// EnsureRollback implements Intents.
func (s *APIStore) EnsureRollback(ctx context.Context, req RolloutRequest) (*fleetv1alpha1.FleetRollout, error) {
	of, err := s.GetRollout(ctx, req.FleetStage.Namespace, req.RollbackOf)
	if err != nil {
		return nil, err
	}
	rb := fleetrollout.NewRollback(fleetrollout.Rollback{Of: of, Freight: req.Freight, Actor: req.Context.Actor,
		Reason: req.Reason, StepKey: req.Context.Key(), AnyFreight: req.AnyFreight, Attempt: req.Attempt})
	got, created, err := rolloutstore.CreateRollback(ctx, s.writer, s.reader, rb)
	if err != nil {
		return got, err
	}
	if created {
		log.FromContext(ctx).V(0).Info("Created rollback FleetRollout", "FleetRollout", client.ObjectKeyFromObject(got),
			"rollbackOf", of.Name, "freight", got.Spec.Freight.Name, "stepKey", req.Context.Key())
	}
	return got, nil
}

// RequestWave implements Intents.
func (s *APIStore) RequestWave(
	ctx context.Context, ro *fleetv1alpha1.FleetRollout, wave, promotion string,
) (*fleetv1alpha1.FleetRollout, error) {
	key := fleetrollout.WaveRequestAnnotation(wave)
	if ro.Annotations[key] == promotion {
		return ro, nil
	}
	patched := ro.DeepCopy()
	if patched.Annotations == nil {
		patched.Annotations = map[string]string{}
	}
	patched.Annotations[key] = promotion
	if err := s.writer.Patch(ctx, patched, client.MergeFrom(ro)); err != nil {
		return nil, fmt.Errorf("error recording the request for wave %q on FleetRollout %q: %w", wave, ro.Name, err)
	}
	log.FromContext(ctx).V(0).Info("Recorded wave request", "FleetRollout", client.ObjectKeyFromObject(ro),
		"wave", wave, "Promotion", promotion)
	return patched, nil
}

// ResumeWave implements Intents.
func (s *APIStore) ResumeWave(
	ctx context.Context, ro *fleetv1alpha1.FleetRollout, wave, promotion, actor string,
) (*fleetv1alpha1.FleetRollout, error) {
	key := fleetrollout.WaveRequestAnnotation(wave)
	if ro.Spec.Intent != fleetv1alpha1.IntentPause && ro.Annotations[key] == promotion {
		return ro, nil
	}
	patched := ro.DeepCopy()
	if patched.Annotations == nil {
		patched.Annotations = map[string]string{}
	}
	patched.Annotations[key] = promotion
	patched.Annotations[fleetv1alpha1.IntentActorAnnotation] = actor
	patched.Spec.Intent = fleetv1alpha1.IntentRun
	// The rollout as read: a pause written since is not overwritten.
	if err := s.writer.Patch(ctx, patched, client.MergeFromWithOptions(ro, client.MergeFromWithOptimisticLock{})); err != nil {
		return nil, fmt.Errorf("error resuming FleetRollout %q for wave %q: %w", ro.Name, wave, err)
	}
	log.FromContext(ctx).V(0).Info("Resumed for a Promotion of the paused wave", "FleetRollout", client.ObjectKeyFromObject(ro),
		"wave", wave, "Promotion", promotion, "actor", actor)
	return patched, nil
}

// recordsRequest reports whether a rollout was created by, or records a wave
// request of, the calling Promotion.
func recordsRequest(ro *fleetv1alpha1.FleetRollout, c StepContext) bool {
	if ro.Annotations[fleetv1alpha1.StepKeyAnnotation] == c.Key() {
		return true
	}
	for _, promotion := range fleetrollout.WaveRequests(ro) {
		if promotion == c.Promotion {
			return true
		}
	}
	return false
}

// HeldBackError refuses a Freight that broke a failure threshold of the
// FleetStage: Kargo, which still sees it verified in the waves it passed, may
// promote it again (auto-promotion, a retried Promotion), and it must not walk
// back into the fleet unless someone decides so.
type HeldBackError struct {
	FleetStage, Freight, Rollout string
}

func (e *HeldBackError) Error() string {
	return fmt.Sprintf("Freight %s is held back from FleetStage %s: FleetRollout %s halted on a breached failure threshold. "+
		"To promote it again deliberately, annotate the FleetStage: kubectl annotate fleetstage %s %s=%s",
		e.Freight, e.FleetStage, e.Rollout, e.FleetStage, fleetv1alpha1.RetryFreightAnnotation, e.Freight)
}
