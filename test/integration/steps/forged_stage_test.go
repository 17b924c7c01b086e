//go:build integration

package steps_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/stepserver"
	"github.com/kargo-fleet/kargo-fleet/steps"
)

// TestSecurity_forgedWaveStage: a user who may create Stages and promote
// only their own creates Stage dev-wave with the fleet's labels and a
// controller reference to FleetStage prod (the API server accepts any
// owner reference from an object's creator), promotes Freight into it and
// sends the fleet-wave call its template would send. The step server
// refuses it: the FleetStage never recorded the Stage's name and UID. No
// FleetStage controller runs in this suite, so nothing prunes the forged
// Stage: the refusal alone stops it. The Stage the FleetStage recorded is
// served.
func TestSecurity_forgedWaveStage(t *testing.T) {
	ctx := context.Background()
	ns := newProject(t)
	fs := newFleetStage(t, ns)
	freight := newFreight(t, ns, "f1").Name
	token := projectToken(t, ns)
	newStage(t, ns, "prod-pilot", generatedBy(fs, fleetv1alpha1.RoleWave, "pilot"), hangs)

	// The forger's rights: create and read Stages and Promotions in the
	// Project, and Kargo's promote on dev-wave only. Kargo's webhook (the
	// simulator's) checks promote with a SubjectAccessReview.
	forger := forgerClient(t, ns, "dev-wave")
	forged := &kargo.Stage{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dev-wave"},
		Spec: kargo.StageSpec{
			RequestedFreight: []kargo.FreightRequest{{Origin: origin, Sources: kargo.FreightSources{Direct: true}}},
			PromotionTemplate: &kargo.PromotionTemplate{Spec: kargo.PromotionTemplateSpec{
				Steps: []kargo.PromotionStep{{Uses: "argocd-update", As: "sync"}},
			}},
		},
	}
	generatedBy(fs, fleetv1alpha1.RoleWave, "pilot")(forged)
	hangs(forged)
	require.NoError(t, forger.Create(ctx, forged), "the API server accepts the forged owner reference")
	require.True(t, metav1.IsControlledBy(forged, fs))
	require.Error(t, forger.Create(ctx, kargo.NewPromotion(ns, "prod-pilot", freight, nil, nil)),
		"the forger may not promote the real wave Stage")
	p := kargo.NewPromotion(ns, "dev-wave", freight, nil, nil)
	require.NoError(t, forger.Create(ctx, p))
	p = waitPromotion(t, p, 10*time.Second, phaseIs(kargo.PromotionRunning))

	status, resp := post(t, stepServer.URL, steps.WaveStepName, token,
		stepRequest(ns, "dev-wave", p.Name, freight, "fleet::start", map[string]any{"mode": "start"}))
	require.Equal(t, http.StatusForbidden, status, resp.Message)
	require.Equal(t, &stepserver.ErrorInfo{Status: http.StatusForbidden, Reason: stepserver.ReasonNotGenerated}, resp.Error)
	require.Contains(t, resp.Message, `stage "dev-wave"`)
	require.Empty(t, rollouts(t, ns), "no rollout for a forged Stage")

	// The same call from the recorded wave Stage starts the rollout.
	recorded := waitPromotion(t, promote(t, ns, "prod-pilot", freight), 10*time.Second, phaseIs(kargo.PromotionRunning))
	status, resp = post(t, stepServer.URL, steps.WaveStepName, token,
		stepRequest(ns, "prod-pilot", recorded.Name, freight, "fleet::start", map[string]any{"mode": "start"}))
	require.Equal(t, http.StatusOK, status, resp.Message)
	require.Equal(t, fs.Name, waitRollout(t, ns).Spec.FleetStage)
}

// forgerClient returns a client for a user who may create and read Stages
// and Promotions in ns and holds Kargo's promote on stage alone.
func forgerClient(t *testing.T, ns, stage string) client.Client {
	t.Helper()
	ctx := context.Background()
	user := "forger-" + ns
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "forger"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{kargo.GroupVersion.Group}, Resources: []string{"stages", "promotions"},
				Verbs: []string{"create", "get", "list", "watch"}},
			{APIGroups: []string{kargo.GroupVersion.Group}, Resources: []string{"stages"},
				Verbs: []string{kargo.PromoteVerb}, ResourceNames: []string{stage}},
		},
	}
	require.NoError(t, k8s.Create(ctx, role))
	require.NoError(t, k8s.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "forger"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	}))
	cfg, err := env.AddUser(user)
	require.NoError(t, err)
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	require.NoError(t, err)
	return c
}
