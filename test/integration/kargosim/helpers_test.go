//go:build integration

package kargosim_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kargo-fleet/kargo-fleet/internal/envtest"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

var origin = kargo.FreightOrigin{Kind: kargo.OriginKindWarehouse, Name: "apps"}

// newProject creates a Kargo Project namespace named after the test.
func newProject(t *testing.T) string {
	t.Helper()
	name := strings.ToLower(regexp.MustCompile(`[^a-zA-Z0-9]+`).ReplaceAllString(t.Name(), "-"))
	if len(name) > 50 {
		name = name[:50]
	}
	name = strings.Trim(name, "-")
	require.NoError(t, k8s.Create(context.Background(), envtest.ProjectNamespace(name)))
	return name
}

// newFreight creates a Freight from the "apps" Warehouse.
func newFreight(t *testing.T, ns, name string) *kargo.Freight {
	t.Helper()
	f := &kargo.Freight{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Origin:     origin,
		Images:     []apiextensionsv1.JSON{{Raw: []byte(`{"repoURL":"example.com/app","tag":"` + name + `"}`)}},
	}
	require.NoError(t, k8s.Create(context.Background(), f))
	return f
}

// stageOpt changes a Stage before it is created.
type stageOpt func(*kargo.Stage)

func upstream(stages ...string) stageOpt {
	return func(s *kargo.Stage) {
		s.Spec.RequestedFreight[0].Sources = kargo.FreightSources{Stages: stages}
	}
}

func vars(kv ...string) stageOpt {
	return func(s *kargo.Stage) {
		for i := 0; i+1 < len(kv); i += 2 {
			s.Spec.Vars = append(s.Spec.Vars, kargo.ExpressionVariable{Name: kv[i], Value: kv[i+1]})
		}
	}
}

func steps(st ...kargo.PromotionStep) stageOpt {
	return func(s *kargo.Stage) { s.Spec.PromotionTemplate.Spec.Steps = st }
}

// newStage creates a Stage taking "apps" Freight directly, with one
// simulated argocd-update step unless told otherwise.
func newStage(t *testing.T, ns, name string, opts ...stageOpt) *kargo.Stage {
	t.Helper()
	s := &kargo.Stage{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: kargo.StageSpec{
			RequestedFreight: []kargo.FreightRequest{{Origin: origin, Sources: kargo.FreightSources{Direct: true}}},
			PromotionTemplate: &kargo.PromotionTemplate{Spec: kargo.PromotionTemplateSpec{
				Steps: []kargo.PromotionStep{{Uses: "argocd-update", As: "sync", Config: cfg(`{"apps":[{"name":"app"}]}`)}},
			}},
		},
	}
	for _, o := range opts {
		o(s)
	}
	require.NoError(t, k8s.Create(context.Background(), s))
	return s
}

func cfg(s string) *apiextensionsv1.JSON { return &apiextensionsv1.JSON{Raw: []byte(s)} }

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

// waitPromotion waits until the Promotion satisfies cond and returns it.
func waitPromotion(t *testing.T, p *kargo.Promotion, timeout time.Duration, cond func(*kargo.Promotion) bool) *kargo.Promotion {
	t.Helper()
	var got kargo.Promotion
	require.Eventually(t, func() bool {
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(p), &got); err != nil {
			return false
		}
		return cond(&got)
	}, timeout, 10*time.Millisecond, "Promotion %s did not reach the expected state; last status: %s", p.Name, dump(&got.Status))
	return &got
}

func phaseIs(phases ...kargo.PromotionPhase) func(*kargo.Promotion) bool {
	return func(p *kargo.Promotion) bool {
		for _, ph := range phases {
			if p.Status.Phase == ph {
				return true
			}
		}
		return false
	}
}

func waitStage(t *testing.T, ns, name string, timeout time.Duration, cond func(*kargo.Stage) bool) *kargo.Stage {
	t.Helper()
	var got kargo.Stage
	require.Eventually(t, func() bool {
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &got); err != nil {
			return false
		}
		return cond(&got)
	}, timeout, 10*time.Millisecond, "Stage %s did not reach the expected state; last status: %s", name, dump(&got.Status))
	return &got
}

func waitFreight(t *testing.T, ns, name string, timeout time.Duration, cond func(*kargo.Freight) bool) *kargo.Freight {
	t.Helper()
	var got kargo.Freight
	require.Eventually(t, func() bool {
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &got); err != nil {
			return false
		}
		return cond(&got)
	}, timeout, 10*time.Millisecond, "Freight %s did not reach the expected state; last status: %s", name, dump(&got.Status))
	return &got
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
