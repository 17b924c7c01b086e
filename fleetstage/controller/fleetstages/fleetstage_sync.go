package fleetstages

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/render"
)

// writeParallelism bounds concurrent Stage writes of one reconcile: enough to
// expand 1,000 targets in seconds, few enough to leave the apiserver (and
// client-side rate limits) room for everything else.
const writeParallelism = 8

// syncResult says what syncStages did.
type syncResult struct {
	created, updated, deleted, unchanged int
	waitingForPrune                      int
	conflicts                            []string
	joined, left, moved                  []string
	// record is the name and UID of every generated Stage after the sync:
	// the recorded ones that stay, and the ones created.
	record map[string]types.UID
	// foreign are Stages that claim to be generated (controller reference
	// to the FleetStage) but are not recorded: they were removed.
	foreign []string
}

// syncStages creates, updates and prunes the generated Stages so they match
// the desired set, writing nothing for a Stage that is already up to date.
// A Stage whose target left the fleet is deleted only when no Promotion of it
// is pending or running; until then it is marked with the prune annotation.
func (r *FleetStageReconciler) syncStages(ctx context.Context, s *scope) (bool, error) {
	fs := s.fs
	// The cache's own objects, read only (restoreStage and prune copy the
	// one they change): copying every Stage of a 10,000-target fleet on
	// each reconcile was a tenth of the controller's heap at its peak.
	existing := &kargo.StageList{}
	if err := r.client.List(ctx, existing, client.InNamespace(fs.Namespace), client.UnsafeDisableDeepCopy,
		client.MatchingLabels{fleetv1alpha1.FleetStageLabel: fs.Name}); err != nil {
		return false, fmt.Errorf("error listing Stages of FleetStage %q: %w", fs.Name, err)
	}
	s.stages = existing.Items
	res := &s.sync
	have, err := r.generated(ctx, s, existing.Items)
	if err != nil {
		setNotReady(fs, fleetv1alpha1.StagesSyncedCondition, fleetv1alpha1.SyncFailedReason, err.Error())
		return false, err
	}
	desired := append(slices.Clone(s.desired.Waves), s.desired.Targets...)
	want := make(map[string]bool, len(desired))
	// The rendering itself is what the per-Stage restore keeps; nothing
	// below changes it (a create sends a copy, which the API server's
	// answer fills in).
	stages := make([]*kargo.Stage, len(desired))
	for i := range desired {
		stages[i] = &desired[i]
	}
	// Before any write: the per-Stage restore compares the Stages this sync
	// updates with this rendering, not the previous one, which it would
	// otherwise write back (an adopted Stage or inventory change re-renders
	// Stages without a new FleetStage generation).
	r.desired.set(fs, stages, res.record)

	var mu sync.Mutex
	// One failed write does not cancel the others: a create cancelled on
	// the client side may still land, and the result would then count it
	// as neither created nor conflicting.
	var g errgroup.Group
	g.SetLimit(writeParallelism)
	for i := range desired {
		d := &desired[i]
		want[d.Name] = true
		cur, ok := have[d.Name]
		switch {
		case !ok:
			g.Go(func() error {
				created := d.DeepCopy()
				err := r.client.Create(ctx, created)
				if err == nil {
					r.createdHere.Store(created.UID, struct{}{})
				}
				mu.Lock()
				defer mu.Unlock()
				switch {
				case apierrors.IsAlreadyExists(err):
					res.conflicts = append(res.conflicts, d.Name)
				case err != nil:
					return fmt.Errorf("error creating Stage %q: %w", d.Name, err)
				default:
					res.created++
					res.record[d.Name] = created.UID
					if d.Labels[fleetv1alpha1.RoleLabel] == fleetv1alpha1.RoleTarget {
						res.joined = append(res.joined, d.Annotations[fleetv1alpha1.TargetNameAnnotation])
					}
				}
				return nil
			})
		case render.UpToDate(cur, d) && cur.Annotations[fleetv1alpha1.PruneAnnotation] == "":
			res.unchanged++
		default:
			movedFrom := cur.Labels[fleetv1alpha1.WaveLabel]
			g.Go(func() error {
				if err := restoreStage(ctx, r.client, cur, d); err != nil {
					return err
				}
				mu.Lock()
				defer mu.Unlock()
				res.updated++
				if movedFrom != "" && movedFrom != d.Labels[fleetv1alpha1.WaveLabel] && d.Labels[fleetv1alpha1.RoleLabel] == fleetv1alpha1.RoleTarget {
					res.moved = append(res.moved, d.Annotations[fleetv1alpha1.TargetNameAnnotation])
				}
				return nil
			})
		}
	}
	if err := g.Wait(); err != nil {
		setNotReady(fs, fleetv1alpha1.StagesSyncedCondition, fleetv1alpha1.SyncFailedReason, err.Error())
		return false, err
	}
	if err := r.prune(ctx, s, have, want); err != nil {
		setNotReady(fs, fleetv1alpha1.StagesSyncedCondition, fleetv1alpha1.SyncFailedReason, err.Error())
		return false, err
	}
	r.recordMembershipEvents(fs, res)
	setStagesSynced(fs, res)
	// Again with the UIDs of the Stages created.
	r.desired.set(fs, stages, res.record)
	return true, nil
}

// prune deletes generated Stages that are no longer desired, unless a
// Promotion of theirs is in flight.
func (r *FleetStageReconciler) prune(ctx context.Context, s *scope, have map[string]*kargo.Stage, want map[string]bool) error {
	var stale []*kargo.Stage
	for name, st := range have {
		if !want[name] {
			stale = append(stale, st)
		}
	}
	if len(stale) == 0 {
		return nil
	}
	busy, err := r.busyStages(ctx, s.fs.Namespace)
	if err != nil {
		return err
	}
	res := &s.sync
	for _, st := range stale {
		if busy[st.Name] {
			res.waitingForPrune++
			if st.Annotations[fleetv1alpha1.PruneAnnotation] == "" {
				marked := st.DeepCopy()
				metav1.SetMetaDataAnnotation(&marked.ObjectMeta, fleetv1alpha1.PruneAnnotation, "true")
				if err := r.client.Patch(ctx, marked, client.MergeFrom(st)); err != nil {
					return fmt.Errorf("error marking Stage %q for pruning: %w", st.Name, err)
				}
			}
			continue
		}
		if err := r.client.Delete(ctx, st, client.Preconditions{UID: &st.UID}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("error deleting Stage %q: %w", st.Name, err)
		}
		delete(res.record, st.Name)
		res.deleted++
		if st.Labels[fleetv1alpha1.RoleLabel] == fleetv1alpha1.RoleTarget {
			res.left = append(res.left, st.Annotations[fleetv1alpha1.TargetNameAnnotation])
		}
	}
	return nil
}

// busyStages returns the Stages of the namespace with a Promotion that is
// neither finished nor aborted.
func (r *FleetStageReconciler) busyStages(ctx context.Context, namespace string) (map[string]bool, error) {
	promos := &kargo.PromotionList{}
	if err := r.client.List(ctx, promos, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("error listing Promotions: %w", err)
	}
	busy := map[string]bool{}
	for i := range promos.Items {
		p := &promos.Items[i]
		if !p.Status.Phase.IsTerminal() {
			busy[p.Spec.Stage] = true
		}
	}
	return busy, nil
}

func setStagesSynced(fs *fleetv1alpha1.FleetStage, res *syncResult) {
	cond := metav1.Condition{Type: fleetv1alpha1.StagesSyncedCondition, ObservedGeneration: fs.Generation}
	switch {
	case len(res.conflicts) > 0:
		slices.Sort(res.conflicts)
		cond.Status, cond.Reason = metav1.ConditionFalse, fleetv1alpha1.SyncFailedReason
		cond.Message = truncate(fmt.Sprintf("%d Stage name(s) are taken by Stages this FleetStage does not own: %s",
			len(res.conflicts), sample(res.conflicts, 5)))
	case res.waitingForPrune > 0:
		cond.Status, cond.Reason = metav1.ConditionFalse, fleetv1alpha1.PruningReason
		cond.Message = fmt.Sprintf("%d Stage(s) of departed targets wait for in-flight Promotions before removal", res.waitingForPrune)
	default:
		cond.Status, cond.Reason = metav1.ConditionTrue, fleetv1alpha1.ReconciledReason
		cond.Message = fmt.Sprintf("%d Stage(s) in step (%d created, %d updated, %d removed)",
			res.created+res.updated+res.unchanged, res.created, res.updated, res.deleted)
	}
	meta.SetStatusCondition(&fs.Status.Conditions, cond)
}
