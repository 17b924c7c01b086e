//go:build integration

package kargosim_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kargo-fleet/kargo-fleet/internal/argocd"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/kargosim"
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

// TestArgoCDUpdateRecordsTheSync: an argocd-update step that updates an
// existing Application leaves on it what Kargo v1.11.2's step and Argo CD's
// run of the sync leave: the operation names the Promotion and its
// initiator, and a sync that succeeded is Synced and Healthy at the
// revision, one that failed is OutOfSync with Argo CD's Failed phase.
func TestArgoCDUpdateRecordsTheSync(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := newProject(t)
	argo := ns + "-argocd"
	require.NoError(t, k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: argo}}))
	newFreight(t, ns, "f1")
	cfgFor := func(app string) kargo.PromotionStep {
		return kargo.PromotionStep{Uses: "argocd-update", As: "sync", Config: cfg(fmt.Sprintf(`{"apps":[{"name":%q,"namespace":%q}]}`, app, argo))}
	}
	newApplication(t, argo, "synced", ns+":good", nil)
	newApplication(t, argo, "failing", ns+":bad", nil)
	newStage(t, testutil.MakeStage(ns, "good").Steps(cfgFor("synced")))
	newStage(t, testutil.MakeStage(ns, "bad").Steps(cfgFor("failing")).Vars(kargosim.FaultVar, kargosim.FaultFail))

	read := func(name string) *argocd.Application {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("argoproj.io/v1alpha1")
		u.SetKind("Application")
		require.NoError(t, k8s.Get(ctx, client.ObjectKey{Namespace: argo, Name: name}, u))
		app, err := argocd.FromUnstructured(u.Object)
		require.NoError(t, err)
		return app
	}
	good := testutil.Await(t, k8s, mustPromote(t, ns, "good", "f1"), 20*time.Second, testutil.PromotionPhaseIs(kargo.PromotionSucceeded))
	app := read("synced")
	sync, ok := app.LastSync()
	require.True(t, ok, "the sync is recorded")
	// Kargo hands its steps the create-actor without the "<kind>:" prefix
	// when the value holds one colon ("kubernetes:admin" starts the sync as
	// "admin"); a ServiceAccount's actor, with more colons, stays whole.
	actor := good.Annotations[kargo.CreateActorAnnotation]
	kind, user, _ := strings.Cut(actor, ":")
	require.Equal(t, "kubernetes", kind, "the test's client is a Kubernetes user: %q", actor)
	if strings.Contains(user, ":") {
		user = actor
	}
	require.Equal(t, argocd.LastSync{Promotion: good.Name, By: user, Phase: argocd.OperationSucceeded,
		Message: "successfully synced (all tasks run)", Revision: "f1"}, sync, "the Promotion's actor starts the sync, not automated")
	require.NotEmpty(t, sync.By)
	require.Equal(t, argocd.SyncStatusSynced, app.Status.Sync.Status)
	require.Equal(t, argocd.HealthHealthy, app.Status.Health.Status)
	require.Equal(t, "f1", app.SyncedRevision())

	bad := testutil.Await(t, k8s, mustPromote(t, ns, "bad", "f1"), 20*time.Second, testutil.PromotionPhaseIs(kargo.PromotionFailed))
	app = read("failing")
	sync, ok = app.LastSync()
	require.True(t, ok)
	require.Equal(t, bad.Name, sync.Promotion)
	require.True(t, sync.Failed(), "%+v", sync)
	require.Contains(t, sync.Message, "simulated failure")
	require.Equal(t, argocd.SyncStatusOutOfSync, app.Status.Sync.Status)
}
