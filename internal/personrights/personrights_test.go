package personrights

import (
	"context"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// grants is a Reviewer that allows what its map lists: user → "verb resource".
type grants map[string][]string

func (g grants) Allowed(_ context.Context, user authenticationv1.UserInfo, attrs authorizationv1.ResourceAttributes) (bool, error) {
	for _, held := range g[user.Username] {
		if held == attrs.Verb+" "+attrs.Resource {
			return true, nil
		}
	}
	return false, nil
}

func serviceAccount(ns, name, claims string) *corev1.ServiceAccount {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if claims != "" {
		sa.Annotations = map[string]string{kargo.OIDCClaimsAnnotation: claims}
	}
	return sa
}

func TestCheck(t *testing.T) {
	t.Parallel()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	reader := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		serviceAccount("shop", "ops", `{"email": ["alice@example.com"]}`),
		serviceAccount("shop", "promoters", `{"email": ["alice@example.com", "bob@example.com"]}`),
		serviceAccount("shop", "plain", ""),
		serviceAccount("kargo", "global-ops", `{"email": "carol@example.com"}`),
		serviceAccount("other", "elsewhere", `{"email": ["dave@example.com"]}`),
	).Build()
	review := grants{
		"system:serviceaccount:shop:ops":         {"patch fleetrollouts"},
		"system:serviceaccount:shop:promoters":   {"promote stages"},
		"system:serviceaccount:kargo:global-ops": {"patch fleetrollouts", "promote stages"},
		"system:serviceaccount:other:elsewhere":  {"patch fleetrollouts", "promote stages"},
		"erin":                                   {"patch fleetrollouts", "promote stages"},
		"frank":                                  {},
	}
	rights := []authorizationv1.ResourceAttributes{
		{Namespace: "shop", Verb: "patch", Resource: "fleetrollouts", Name: "prod-1"},
		{Namespace: "shop", Verb: "promote", Resource: "stages", Name: "prod-pilot"},
	}
	c := NewChecker(reader, review)
	c.GlobalNamespaces = []string{"kargo"}
	cases := []struct {
		name    string
		person  Person
		allowed bool
		says    string
	}{
		{"each right held by one of the mapped accounts", Person{Actor: "email:alice@example.com"}, true, ""},
		{"a mapped account without the fleet right", Person{Actor: "email:bob@example.com"}, false,
			`email:bob@example.com (reviewed as system:serviceaccount:shop:promoters) lacks patch on fleetrollouts "prod-1"`},
		{"an account of a global namespace", Person{Actor: "email:carol@example.com"}, true, ""},
		{"an account of another Project maps nobody here", Person{Actor: "email:dave@example.com"}, false,
			`no ServiceAccount of namespace "shop" or kargo maps email "dave@example.com"`},
		{"a Kubernetes user as that user", Person{Actor: "kubernetes:erin"}, true, ""},
		{"a Kubernetes user without the rights", Person{Actor: "kubernetes:frank"}, false, "kubernetes:frank (reviewed as frank) lacks patch"},
		{"the whole identity at admission", Person{Actor: "kubernetes:frank", Direct: &authenticationv1.UserInfo{Username: "erin"}}, true, ""},
		{"Kargo's admin account", Person{Actor: "admin"}, true, ""},
		{"an unknown actor", Person{Actor: kargo.UnknownActor}, false, "Kargo recorded no one kargo-fleet can look up"},
		{"a Kargo controller", Person{Actor: "controller:kargo-controller"}, false, "acts for nobody"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v, err := c.Check(context.Background(), tc.person, "shop", rights)
			if err != nil {
				t.Fatal(err)
			}
			if v.Allowed != tc.allowed {
				t.Fatalf("allowed = %v, want %v (%s)", v.Allowed, tc.allowed, v.Describe(tc.person.Name()))
			}
			if got := v.Describe(tc.person.Name()); tc.says != "" && !strings.Contains(got, tc.says) {
				t.Errorf("says %q, want it to contain %q", got, tc.says)
			}
		})
	}

	strict := NewChecker(reader, review)
	strict.AdminHasNoFleetRights = true
	if v, err := strict.Check(context.Background(), Person{Actor: "admin"}, "shop", rights); err != nil || v.Allowed {
		t.Errorf("admin allowed with AdminHasNoFleetRights: %+v, %v", v, err)
	}
}

func TestCheckedAtAdmission(t *testing.T) {
	t.Parallel()
	for actor, want := range map[string]bool{
		"kubernetes:alice": true, "email:alice@example.com": false, "admin": false, kargo.UnknownActor: false,
	} {
		if got := CheckedAtAdmission(actor); got != want {
			t.Errorf("CheckedAtAdmission(%q) = %v, want %v", actor, got, want)
		}
	}
}
