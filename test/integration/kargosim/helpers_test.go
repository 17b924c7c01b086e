//go:build integration

package kargosim_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kargo-fleet/kargo-fleet/internal/envtest"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

var origin = testutil.Warehouse

// newProject creates a Kargo Project namespace named after the test.
func newProject(t *testing.T) string {
	t.Helper()
	name := strings.ToLower(regexp.MustCompile(`[^a-zA-Z0-9]+`).ReplaceAllString(t.Name(), "-"))
	if len(name) > 50 {
		name = name[:50]
	}
	name = strings.Trim(name, "-")
	testutil.Create(t, k8s, envtest.ProjectNamespace(name))
	return name
}

// newFreight creates a Freight from the "apps" Warehouse.
func newFreight(t *testing.T, ns, name string) *kargo.Freight {
	t.Helper()
	f := testutil.MakeFreight(ns, name).Obj()
	testutil.Create(t, k8s, f)
	return f
}

// stage builds a Stage taking "apps" Freight directly, with one simulated
// argocd-update step.
func stage(ns, name string) *testutil.StageWrapper {
	return testutil.MakeStage(ns, name).ArgoCDUpdate("app")
}

// newStage creates the Stage w builds, after the mutations.
func newStage(t *testing.T, w *testutil.StageWrapper, mutate ...func(*kargo.Stage)) *kargo.Stage {
	t.Helper()
	s := w.Obj()
	for _, m := range mutate {
		m(s)
	}
	testutil.Create(t, k8s, s)
	return s
}

func cfg(s string) *apiextensionsv1.JSON { return testutil.JSON(s) }

// promote creates a Promotion with the given client and returns it as
// admitted (renamed).
func promote(ctx context.Context, c client.Client, ns, stage, freight string, annotations map[string]string) (*kargo.Promotion, error) {
	p := kargo.NewPromotion(ns, stage, freight, map[string]string{"app.example/mine": "yes"}, annotations)
	err := c.Create(ctx, p)
	return p, err
}

func mustPromote(t *testing.T, ns, stage, freight string) *kargo.Promotion {
	t.Helper()
	p, err := promote(context.Background(), k8s, ns, stage, freight, nil)
	require.NoError(t, err)
	return p
}

func dump(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// stagePromotions lists the Stage's Promotions.
func stagePromotions(t *testing.T, ns, stage string) []kargo.Promotion {
	t.Helper()
	var list kargo.PromotionList
	require.NoError(t, k8s.List(context.Background(), &list, client.InNamespace(ns), client.MatchingLabels{kargo.StageLabel: stage}))
	return list.Items
}

// userClient creates a user with the given rules in the namespace (none:
// no rights at all) and returns a client acting as that user.
func userClient(t *testing.T, ns, name string, rules ...rbacv1.PolicyRule) client.Client {
	t.Helper()
	ctx := context.Background()
	cfg, err := env.AddUser(name)
	require.NoError(t, err)
	if len(rules) > 0 {
		role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Rules: rules}
		require.NoError(t, k8s.Create(ctx, role))
		rb := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}},
		}
		require.NoError(t, k8s.Create(ctx, rb))
	}
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	require.NoError(t, err)
	return c
}

func newSecret(t *testing.T, ns, name string, data map[string]string) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, StringData: data}
	require.NoError(t, k8s.Create(context.Background(), s))
}

func annotate(t *testing.T, obj client.Object, key, value string) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, key, value)
	require.NoError(t, k8s.Patch(context.Background(), obj, client.RawPatch("application/merge-patch+json", []byte(patch))))
}
