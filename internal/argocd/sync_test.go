package argocd

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPromotionStage(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]string{
		"prod.eu-west-1.01jdx3k0a1b2c3d4e5f6g7h8j9.9f8e7d6": "prod.eu-west-1",
		"prod-pilot.01jdx3k0a1b2c3d4e5f6g7h8j9.9f8e7d6":     "prod-pilot",
		"x.y": "", "nodots": "", ".a.b": "", "": "",
	} {
		got, ok := PromotionStage(name)
		require.Equal(t, want != "", ok, name)
		require.Equal(t, want, got, name)
	}
}

func TestFromUnstructuredReadsKargoSync(t *testing.T) {
	t.Parallel()
	app, err := FromUnstructured(map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"name": "guestbook-eu-1", "namespace": "argocd"},
		"spec":     map[string]any{"project": "default"},
		"status": map[string]any{
			"sync":    map[string]any{"status": "Synced", "revision": "abc123"},
			"health":  map[string]any{"status": "Healthy"},
			"summary": map[string]any{"images": []any{"nginx:1.27"}},
			"operationState": map[string]any{
				"phase": "Succeeded", "message": "successfully synced (all tasks run)",
				"startedAt": "2026-12-02T08:00:00Z",
				"operation": map[string]any{
					"initiatedBy": map[string]any{"username": "kargo-controller", "automated": true},
					"info":        []any{map[string]any{"name": "kargo.akuity.io/promotion", "value": "prod.eu-1.01jdx.9f8e7d6"}},
					"sync":        map[string]any{"revisions": []any{}},
				},
				"syncResult": map[string]any{"revision": "abc123"},
			},
		},
	})
	require.NoError(t, err)
	s, ok := app.LastSync()
	require.True(t, ok)
	require.Equal(t, LastSync{Promotion: "prod.eu-1.01jdx.9f8e7d6", By: KargoInitiator, Automated: true,
		Phase: OperationSucceeded, Message: "successfully synced (all tasks run)", Revision: "abc123"}, s)
	require.False(t, s.Running())
	require.Equal(t, "abc123", app.SyncedRevision())
	require.Equal(t, []string{"nginx:1.27"}, app.Status.Summary.Images)
}
