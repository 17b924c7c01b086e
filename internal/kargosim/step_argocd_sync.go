package kargosim

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kargo-fleet/kargo-fleet/internal/argocd"
)

// appSync is one argocd-update sync of an Application and its outcome.
type appSync struct {
	// promotion and actor are the Promotion and its create-actor ("" for
	// Kargo's own Promotions).
	promotion, actor string
	// revision stands for the Git revision the sync applies: the Freight's
	// name (the simulator has no Git).
	revision  string
	at        time.Time
	succeeded bool
	// message is the failure's message.
	message string
}

// syncState is the Application's status after the sync, as Kargo v1.11.2's
// argocd-update step starts it and Argo CD runs it: the operation names
// the Promotion (info kargo.akuity.io/promotion) and its initiator (the
// Promotion's create-actor, else Kargo's controller, then "automated");
// a sync that succeeded leaves the Application Synced and Healthy at the
// revision, one that failed leaves it OutOfSync with Argo CD's message.
func (a appSync) syncState() map[string]any {
	by, automated := a.actor, false
	if by == "" {
		by, automated = argocd.KargoInitiator, true
	}
	at := a.at.UTC().Format(time.RFC3339)
	op := map[string]any{
		"initiatedBy": map[string]any{"username": by, "automated": automated},
		"info": []any{
			map[string]any{"name": "Reason", "value": "Promotion triggered a sync of this Application resource."},
			map[string]any{"name": argocd.PromotionInfoKey, "value": a.promotion},
		},
		"sync": map[string]any{"revisions": []any{}},
	}
	state := map[string]any{"operation": op, "startedAt": at, "finishedAt": at,
		"syncResult": map[string]any{"revision": a.revision}}
	status := map[string]any{"operationState": state}
	if a.succeeded {
		state["phase"], state["message"] = argocd.OperationSucceeded, "successfully synced (all tasks run)"
		status["sync"] = map[string]any{"status": argocd.SyncStatusSynced, "revision": a.revision}
		status["health"] = map[string]any{"status": argocd.HealthHealthy}
	} else {
		state["phase"], state["message"] = argocd.OperationFailed, "one or more objects failed to apply: "+a.message
		status["sync"] = map[string]any{"status": argocd.SyncStatusOutOfSync, "revision": a.revision}
	}
	return map[string]any{"status": status}
}

// recordSync implements applicationReader: a merge patch of the
// Application's status.
func (s *Simulator) recordSync(ctx context.Context, app *unstructured.Unstructured, sync appSync) error {
	raw, err := json.Marshal(sync.syncState())
	if err != nil {
		return err
	}
	target := &unstructured.Unstructured{}
	target.SetGroupVersionKind(applicationGVK)
	target.SetNamespace(app.GetNamespace())
	target.SetName(app.GetName())
	if err := s.client.Status().Patch(ctx, target, client.RawPatch(types.MergePatchType, raw)); err != nil {
		return fmt.Errorf("error recording the sync of Argo CD Application %q in namespace %q: %w", app.GetName(), app.GetNamespace(), err)
	}
	return nil
}
