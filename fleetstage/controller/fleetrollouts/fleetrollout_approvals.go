package fleetrollouts

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/audit"
	"github.com/kargo-fleet/kargo-fleet/internal/rollout"
)

// ApprovalGivenReason is the reason of the Event saying a person approved a
// wave of the rollout with kargo-fleet approve: recorded once per person and
// wave, on the wave Stage and in the FleetStage's audit trail.
const ApprovalGivenReason = "ApprovalGiven"

// onceRecorder records an Event once per key (kargoevents.Recorder).
type onceRecorder interface {
	EventOnce(ctx context.Context, key string, regarding, related runtime.Object, eventtype, reason, action,
		note string, args ...any) (bool, error)
}

// approvalsRecorded remembers the approvals this process recorded, so a
// rollout's reconciles do not ask the API server again each time.
type approvalsRecorded struct {
	mu   sync.Mutex
	keys map[types.UID]map[string]bool
}

func (a *approvalsRecorded) has(uid types.UID, key string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.keys[uid][key]
}

func (a *approvalsRecorded) add(uid types.UID, key string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.keys == nil {
		a.keys = map[types.UID]map[string]bool{}
	}
	if a.keys[uid] == nil {
		a.keys[uid] = map[string]bool{}
	}
	a.keys[uid][key] = true
}

func (a *approvalsRecorded) forget(uid types.UID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.keys, uid)
}

// recordApprovals records each approval of the rollout's waves once, with
// the approver's identity as the API server authenticated it (the webhook
// admits only one's own approval): on the wave Stage, where the Kargo UI
// shows it, and in the audit trail, which outlives the Event.
func (r *FleetRolloutReconciler) recordApprovals(ctx context.Context, ro *fleetv1alpha1.FleetRollout) {
	once, ok := r.recorder.(onceRecorder)
	if !ok {
		return
	}
	for k := range ro.Annotations {
		wave, ok := strings.CutPrefix(k, fleetv1alpha1.ApprovalsAnnotationPrefix)
		if !ok {
			continue
		}
		for _, a := range rollout.ApprovalsOf(ro, wave) {
			key := approvalKey(ro.UID, wave, a.User)
			if r.approvals.has(ro.UID, key) {
				continue
			}
			actx := audit.WithDetail(ctx, audit.Detail{Actor: "kubernetes:" + a.User, Identity: a.User})
			_, err := once.EventOnce(actx, key, ro, waveStage(ro, wave), corev1.EventTypeNormal, ApprovalGivenReason, "Approve",
				"Wave %s of FleetRollout %s (Freight %s) approved by %s (groups: %s) at %s", wave, ro.Name, ro.Spec.Freight.Name,
				a.User, strings.Join(a.Groups, ", "), a.At.UTC().Format("2006-01-02 15:04:05 UTC"))
			if err != nil {
				ctrl.LoggerFrom(ctx).Info("Recording an approval failed; retrying at the next reconcile", "wave", wave,
					"user", a.User, "error", err.Error())
				continue
			}
			r.approvals.add(ro.UID, key)
		}
	}
}

// approvalKey names the Event of one person's approval of a wave: a user
// name may hold characters an object name may not.
func approvalKey(uid types.UID, wave, user string) string {
	sum := sha256.Sum256([]byte(user))
	return fmt.Sprintf("approval.%s.%s.%s", uid, wave, hex.EncodeToString(sum[:8]))
}
