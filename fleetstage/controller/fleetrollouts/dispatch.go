package fleetrollouts

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/render"
	"github.com/kargo-fleet/kargo-fleet/internal/rollout"
)

// claimWindow is how long another controller's claim holds this one back
// while some of its Promotions do not exist yet: long enough for a create
// batch in flight to land, short enough that a controller restarted after
// a kill in the middle of a batch goes on soon. A failover through leader
// election takes a Lease period (15 s), longer than the window.
const claimWindow = 5 * time.Second

// claimRetry is how soon a reconcile held back by another controller's
// claim looks again.
const claimRetry = 250 * time.Millisecond

// conflictRetry is how soon a reconcile whose claim lost looks again: most
// often its cache had not yet seen the rollout's latest status write.
const conflictRetry = 20 * time.Millisecond

// newControllerID names this controller process in the claims it writes:
// the host, and a random part that a restart renews.
func newControllerID() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	host, _ := os.Hostname()
	if len(host) > 100 {
		host = host[:100]
	}
	return host + "/" + hex.EncodeToString(b)
}

// batch is what one reconcile is about to create: target Promotions, at
// most one wave Stage Promotion, and at most one that recovers a wave
// whose wave Stage Promotion errored.
type batch struct {
	starts   []rollout.Start
	wave     string
	recovery *rollout.WaveRecovery
}

func (b batch) empty() bool { return len(b.starts) == 0 && b.wave == "" && b.recovery == nil }

func (b batch) keys() []string {
	keys := make([]string, 0, len(b.starts)+1)
	for _, s := range b.starts {
		keys = append(keys, s.Target.ID)
	}
	if b.wave != "" {
		keys = append(keys, rollout.WaveKey(b.wave))
	}
	if b.recovery != nil {
		keys = append(keys, b.recovery.Key())
	}
	return keys
}

// claim fences the Promotions of b against a second controller reconciling
// the same rollout at the same time (split brain: a leader that lost its
// Lease and has not noticed). It returns the part of b this reconcile may
// create, which is empty when it must not create anything now, and how
// soon to look again then.
//
//  1. A fresh claim by another controller whose Promotions do not all
//     exist yet holds this reconcile back: its creates may be in flight.
//  2. Promotions that exist already (read from the API server, not the
//     cache, which may lag) are dropped from b.
//  3. The claim of what remains is written into status.dispatch with an
//     optimistic lock on the rollout this reconcile read. Of two
//     controllers claiming on the same version, one loses with a conflict
//     and creates nothing; the winner's claim then holds it back (1).
//
// The claim of a controller's own earlier batch does not hold it back: its
// creates returned before this reconcile began.
func (r *FleetRolloutReconciler) claim(ctx context.Context, s *scope, b batch) (batch, time.Duration, error) {
	if b.empty() {
		return b, 0, nil
	}
	ro := s.ro
	now := r.clock.Now()
	if prev := ro.Status.Dispatch; prev != nil && prev.Controller != r.id && now.Sub(prev.At.Time) < claimWindow {
		exist, err := r.existing(ctx, s, prev.Keys)
		if err != nil {
			return batch{}, 0, err
		}
		for _, k := range prev.Keys {
			if !exist.keys[k] {
				r.metrics.claimsHeldBack.Inc()
				return batch{}, claimRetry, nil
			}
		}
	}
	// A rollout that never claimed a batch has no target Promotion: each
	// is created only after a claim, and status.dispatch is never cleared.
	// The claim below is locked on the version read here, so if any
	// controller claimed in between, it loses. Its first batch (a
	// rollback's, right after a breach) needs no read-back of the targets.
	keys := b.keys()
	if ro.Status.Dispatch == nil {
		keys = waveKeys(keys)
	}
	exist, err := r.existing(ctx, s, keys)
	if err != nil {
		return batch{}, 0, err
	}
	b.starts = slices.DeleteFunc(slices.Clone(b.starts), exist.has)
	if exist.keys[rollout.WaveKey(b.wave)] {
		b.wave = ""
	}
	if b.recovery != nil && exist.keys[b.recovery.Key()] {
		b.recovery = nil
	}
	if b.empty() {
		return b, 0, nil
	}
	claimed := ro.DeepCopy()
	claimed.Status.Dispatch = &fleetv1alpha1.Dispatch{Controller: r.id, Keys: b.keys(), At: metav1.NewTime(now)}
	err = r.client.Status().Patch(ctx, claimed, client.MergeFromWithOptions(ro, client.MergeFromWithOptimisticLock{}))
	switch {
	case apierrors.IsConflict(err):
		r.metrics.claimsLost.Inc()
		return batch{}, conflictRetry, nil
	case err != nil:
		return batch{}, 0, fmt.Errorf("error claiming Promotions of FleetRollout %q: %w", ro.Name, err)
	}
	// The reconcile goes on from what it wrote; its final status write must
	// neither undo the claim nor lose to the version it just made.
	ro.ResourceVersion = claimed.ResourceVersion
	ro.Status.Dispatch = claimed.Status.Dispatch
	s.status.Dispatch = claimed.Status.Dispatch.DeepCopy()
	return b, 0, nil
}

// waveKeys returns the wave Stage keys of keys. Wave Stage Promotions
// are checked always: kargo-fleet records a rollback on wave Stages
// without a claim.
func waveKeys(keys []string) []string {
	return slices.DeleteFunc(slices.Clone(keys), func(k string) bool {
		return !strings.HasPrefix(k, rollout.WavePromotionKey) && !strings.HasPrefix(k, rollout.WaveRecoveryKeyPrefix)
	})
}

// existingWaves marks in keys the wave Stage Promotions of waves and the
// recoveries (errored Promotion → wave) that exist.
func (r *FleetRolloutReconciler) existingWaves(ctx context.Context, s *scope, waves []string, recoveries map[string]string,
	keys map[string]bool) error {
	ro := s.ro
	list := &kargo.PromotionList{}
	if err := r.reader.List(ctx, list, client.InNamespace(ro.Namespace),
		client.MatchingLabels{fleetv1alpha1.WavePromotionLabel: ro.Name}); err != nil {
		return fmt.Errorf("error listing the wave Promotions of FleetRollout %q: %w", ro.Name, err)
	}
	for _, w := range waves {
		stage := render.WaveStageName(s.fs.Name, w)
		for _, p := range list.Items {
			if p.Spec.Stage == stage && p.Spec.Freight == ro.Spec.Freight.Name && p.Annotations[fleetv1alpha1.RecoversAnnotation] == "" {
				keys[rollout.WaveKey(w)] = true
			}
		}
	}
	for i := range list.Items {
		p := &list.Items[i]
		errored := p.Annotations[fleetv1alpha1.RecoversAnnotation]
		if w, ok := recoveries[errored]; ok && p.Spec.Stage == render.WaveStageName(s.fs.Name, w) {
			keys[rollout.WaveRecoveryKey(w, errored)] = true
		}
	}
	return nil
}

// existingPromotions says which keys already have their Promotion, and for
// which target Stage UIDs the target Promotions were made.
type existingPromotions struct {
	keys map[string]bool
	// stages holds, by target ID, the Stage UIDs its Promotions were made
	// for (rollout.PromotionStageUID; "" when one shows none).
	stages map[string]map[types.UID]bool
}

// has reports whether the Promotion a start would create exists: a
// Promotion of the rollout for the target, made for the Stage the start is
// for. A Promotion made for an earlier Stage of the target's name (deleted
// and re-created since) does not count; one that shows no Stage does.
func (e existingPromotions) has(st rollout.Start) bool {
	if !e.keys[st.Target.ID] {
		return false
	}
	uids := e.stages[st.Target.ID]
	return st.StageUID == "" || uids[st.StageUID] || uids[""]
}

// existing reports which of keys already have their Promotion, read from
// the API server.
func (r *FleetRolloutReconciler) existing(ctx context.Context, s *scope, keys []string) (existingPromotions, error) {
	ro := s.ro
	out := existingPromotions{keys: map[string]bool{}, stages: map[string]map[types.UID]bool{}}
	var targets, waves []string
	recoveries := map[string]string{}
	for _, k := range keys {
		if w, errored, ok := rollout.ParseWaveRecoveryKey(k); ok {
			recoveries[errored] = w
			continue
		}
		if w, ok := strings.CutPrefix(k, rollout.WavePromotionKey); ok {
			waves = append(waves, w)
		} else {
			targets = append(targets, k)
		}
	}
	if len(targets) > 0 {
		in, err := labels.NewRequirement(fleetv1alpha1.TargetLabel, selection.In, targets)
		if err != nil {
			return out, fmt.Errorf("error selecting the Promotions of targets %v: %w", targets, err)
		}
		own, _ := labels.NewRequirement(fleetv1alpha1.RolloutLabel, selection.Equals, []string{ro.Name})
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(kargo.GroupVersion.WithKind("PromotionList"))
		if err := r.reader.List(ctx, list, client.InNamespace(ro.Namespace),
			client.MatchingLabelsSelector{Selector: labels.NewSelector().Add(*own, *in)}); err != nil {
			return out, fmt.Errorf("error listing the Promotions of FleetRollout %q: %w", ro.Name, err)
		}
		for i := range list.Items {
			p := &list.Items[i]
			id := p.Labels[fleetv1alpha1.TargetLabel]
			out.keys[id] = true
			if out.stages[id] == nil {
				out.stages[id] = map[types.UID]bool{}
			}
			out.stages[id][rollout.PromotionStageUID(p)] = true
		}
	}
	if (len(waves) > 0 || len(recoveries) > 0) && s.fs != nil {
		if err := r.existingWaves(ctx, s, waves, recoveries, out.keys); err != nil {
			return out, err
		}
	}
	return out, nil
}
