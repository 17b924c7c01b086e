//go:build integration

package kargosim_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

// newApplication creates an Argo CD Application (permissive test CRD) with
// the given labels and authorized-stage annotation ("" leaves it out).
func newApplication(t *testing.T, ns, name, authorized string, labels map[string]string) {
	t.Helper()
	app := &unstructured.Unstructured{}
	app.SetAPIVersion("argoproj.io/v1alpha1")
	app.SetKind("Application")
	app.SetNamespace(ns)
	app.SetName(name)
	app.SetLabels(labels)
	if authorized != "" {
		app.SetAnnotations(map[string]string{kargo.AuthorizedStageAnnotation: authorized})
	}
	require.NoError(t, k8s.Create(context.Background(), app))
}

// TestArgoCDUpdateAuthorizesApplications: an argocd-update step refuses an
// existing Application that does not name the Stage in its
// kargo.akuity.io/authorized-stage annotation, with Kargo v1.11.2's
// message, and passes one that does; Applications that do not exist keep
// the simulated outcome.
func TestArgoCDUpdateAuthorizesApplications(t *testing.T) {
	t.Parallel()
	ns := newProject(t)
	argo := ns + "-argocd"
	require.NoError(t, k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: argo}}))
	newFreight(t, ns, "f1")

	newApplication(t, argo, "unannotated", "", nil)
	newApplication(t, argo, "authorized", fmt.Sprintf("other:x, %s:ok", ns), nil)
	newApplication(t, argo, "glob", ns+":*", nil)
	newApplication(t, argo, "other-stage", ns+":ok", nil)
	newApplication(t, argo, "sel-1", ns+":someone-else", map[string]string{"team": "a"})
	newApplication(t, argo, "sel-2", "", map[string]string{"team": "a"})

	byName := func(app string) string {
		return fmt.Sprintf(`{"apps":[{"name":%q,"namespace":%q}]}`, app, argo)
	}
	tests := []struct {
		stage     string
		config    string
		wantPhase kargo.PromotionPhase
		wantMsg   string
	}{
		{stage: "missing", config: byName("unannotated"), wantPhase: kargo.PromotionErrored,
			wantMsg: fmt.Sprintf(`Argo CD Application "unannotated" in namespace %q is not authorized`, argo)},
		{stage: "ok", config: byName("authorized"), wantPhase: kargo.PromotionSucceeded},
		{stage: "globbed", config: byName("glob"), wantPhase: kargo.PromotionErrored,
			wantMsg: fmt.Sprintf(`Argo CD Application "glob" in namespace %q is not authorized`, argo)},
		{stage: "not-listed", config: byName("other-stage"), wantPhase: kargo.PromotionErrored,
			wantMsg: "is not authorized"},
		{stage: "selector", config: fmt.Sprintf(`{"apps":[{"selector":{"matchLabels":{"team":"a"}},"namespace":%q}]}`, argo),
			wantPhase: kargo.PromotionErrored,
			wantMsg: fmt.Sprintf(`found 2 Application(s) matching selector in namespace %q, but none are authorized for Stage %s:selector`,
				argo, ns)},
		{stage: "absent", config: byName("nobody-created-it"), wantPhase: kargo.PromotionSucceeded},
	}
	for _, tt := range tests {
		t.Run(tt.stage, func(t *testing.T) {
			newStage(t, stage(ns, tt.stage).Steps(kargo.PromotionStep{Uses: "argocd-update", As: "sync", Config: cfg(tt.config)}))
			p := mustPromote(t, ns, tt.stage, "f1")
			got := testutil.Await(t, k8s, p, 20*time.Second, testutil.PromotionPhaseIs(kargo.PromotionSucceeded, kargo.PromotionErrored, kargo.PromotionFailed))
			require.Equal(t, tt.wantPhase, got.Status.Phase, dump(&got.Status))
			if tt.wantMsg != "" {
				require.Contains(t, got.Status.Message, tt.wantMsg)
				require.Contains(t, got.Status.StepExecutionMetadata[0].Message, tt.wantMsg)
			}
		})
	}
}
