package inventory

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
)

func testScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	require.NoError(t, corev1.AddToScheme(s))
	require.NoError(t, kargo.AddToScheme(s))
	require.NoError(t, AddToScheme(s))
	return s
}

// inventoryObjects is a small inventory spread over every kind and over
// namespaces the sources must or must not read.
func inventoryObjects() []client.Object {
	secret := func(name, ns, secretType, server string, labels map[string]string) *corev1.Secret {
		l := map[string]string{ArgoCDSecretTypeLabel: secretType}
		for k, v := range labels {
			l[k] = v
		}
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: l},
			Data: map[string][]byte{"name": []byte(name), "server": []byte(server)}}
	}
	return []client.Object{
		secret("eu-1", "argocd", "cluster", "https://eu-1", map[string]string{"env": "prod"}),
		secret("eu-2", "argocd", "cluster", "https://eu-2", map[string]string{"env": "staging"}),
		secret("no-server", "argocd", "cluster", "", map[string]string{"env": "prod"}),
		secret("repo-creds", "argocd", "repository", "https://git", map[string]string{"env": "prod"}),
		secret("other-ns", "argocd-2", "cluster", "https://x", map[string]string{"env": "prod"}),
		&kargo.Target{ObjectMeta: metav1.ObjectMeta{Name: "store-1", Namespace: "project-a"},
			Spec: kargo.TargetSpec{Params: map[string]apiextensionsv1.JSON{"url": {Raw: []byte(`"https://s1"`)}}}},
		&kargo.Target{ObjectMeta: metav1.ObjectMeta{Name: "store-2", Namespace: "project-b"},
			Spec: kargo.TargetSpec{Params: map[string]apiextensionsv1.JSON{"dbPassword": {Raw: []byte(`"hunter2"`)}}}},
		&kargo.Target{ObjectMeta: metav1.ObjectMeta{Name: "evil", Namespace: "project-c"},
			Spec: kargo.TargetSpec{Params: map[string]apiextensionsv1.JSON{"url": {Raw: []byte(`"${{ secret('db').password }}"`)}}}},
		&kargo.Target{ObjectMeta: metav1.ObjectMeta{Name: "evil-name", Namespace: "project-d",
			Annotations: map[string]string{"example.com/note": "${{ vars.x }}"}}},
		&ClusterProfile{ObjectMeta: metav1.ObjectMeta{Name: "member-1", Namespace: "fleet-system"}},
	}
}

func TestReader_ReadSources(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		sources     []fleetv1alpha1.TargetSource
		namespaces  []string
		wantIDs     []string
		wantSkipped []string
		wantErr     string
	}{
		{
			name:        "Argo CD clusters of the default namespace only, never other Secrets",
			sources:     []fleetv1alpha1.TargetSource{{Kind: fleetv1alpha1.ArgoCDClusterSource}},
			wantIDs:     []string{"eu-1", "eu-2"},
			wantSkipped: []string{"no-server"},
		},
		{
			name: "source selector narrows the list",
			sources: []fleetv1alpha1.TargetSource{{Kind: fleetv1alpha1.ArgoCDClusterSource,
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}}},
			wantIDs:     []string{"eu-1"},
			wantSkipped: []string{"no-server"},
		},
		{
			name:       "explicit namespace the operator allows",
			sources:    []fleetv1alpha1.TargetSource{{Kind: fleetv1alpha1.ArgoCDClusterSource, Namespace: "argocd-2"}},
			namespaces: []string{"argocd-2"},
			wantIDs:    []string{"other-ns"},
		},
		{
			name:    "explicit namespace the operator does not allow",
			sources: []fleetv1alpha1.TargetSource{{Kind: fleetv1alpha1.ArgoCDClusterSource, Namespace: "argocd-2"}},
			wantErr: `ArgoCDCluster source may not read namespace "argocd-2": Argo CD cluster Secrets are read only ` +
				`from "argocd" (controller flag --inventory-namespaces)`,
		},
		{
			name:    "Argo CD cluster Secrets of the FleetStage's own namespace",
			sources: []fleetv1alpha1.TargetSource{{Kind: fleetv1alpha1.ArgoCDClusterSource, Namespace: "project-a"}},
			wantErr: `ArgoCDCluster source may not read namespace "project-a": Argo CD cluster Secrets are read only`,
		},
		{
			name:    "another Project's Kargo Targets",
			sources: []fleetv1alpha1.TargetSource{{Kind: fleetv1alpha1.KargoTargetSource, Namespace: "project-b"}},
			wantErr: `KargoTarget source may not read namespace "project-b"`,
		},
		{
			name:       "the default Argo CD namespace is refused when the operator leaves it out",
			sources:    []fleetv1alpha1.TargetSource{{Kind: fleetv1alpha1.ArgoCDClusterSource}},
			namespaces: []string{"gitops"},
			wantErr:    `ArgoCDCluster source may not read namespace "argocd"`,
		},
		{
			name:       "a param holding a Kargo expression fails the read",
			sources:    []fleetv1alpha1.TargetSource{{Kind: fleetv1alpha1.KargoTargetSource, Namespace: "project-c"}},
			namespaces: []string{"project-c"},
			wantErr:    `target "evil" of source KargoTarget: params.url contains "${{"`,
		},
		{
			name: "an annotation holding a Kargo expression fails the read",
			sources: []fleetv1alpha1.TargetSource{{Kind: fleetv1alpha1.KargoTargetSource, Namespace: "project-d",
				Annotations: []string{"example.com/note"}}},
			namespaces: []string{"project-d"},
			wantErr:    `params.example.com/note contains "${{"`,
		},
		{
			name: "an inline target holding a Kargo expression fails the read",
			sources: []fleetv1alpha1.TargetSource{{Kind: fleetv1alpha1.InlineSource,
				Inline: []fleetv1alpha1.InlineTarget{{Name: "r", Params: map[string]string{"${{ x }}": "1"}}}}},
			wantErr: `params.${{ x }} contains "${{"`,
		},
		{
			name: "Kargo Targets and ClusterProfiles default to the FleetStage's namespace; sources keep their order",
			sources: []fleetv1alpha1.TargetSource{
				{Kind: fleetv1alpha1.ClusterProfileSource, Namespace: "fleet-system"},
				{Kind: fleetv1alpha1.KargoTargetSource},
				{Kind: fleetv1alpha1.InlineSource, Inline: []fleetv1alpha1.InlineTarget{{Name: "router"}}},
			},
			namespaces: []string{"argocd", "fleet-system"},
			wantIDs:    []string{"member-1", "store-1", "router"},
		},
		{
			name: "bad selector",
			sources: []fleetv1alpha1.TargetSource{{Kind: fleetv1alpha1.KargoTargetSource,
				Selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Near"}}}}},
			wantErr: "error reading KargoTarget source: invalid selector",
		},
		{
			name:    "unknown kind",
			sources: []fleetv1alpha1.TargetSource{{Kind: "Rancher"}},
			wantErr: `unknown kind "Rancher"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(inventoryObjects()...).Build()
			r := NewReader(c)
			if tt.namespaces != nil {
				r = r.WithNamespaces(NewNamespacePolicy(tt.namespaces))
			}
			snap, err := r.ReadSources(context.Background(), "project-a", tt.sources)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			ids := make([]string, 0, len(snap.Targets))
			for _, target := range snap.Targets {
				ids = append(ids, target.ID)
			}
			require.Equal(t, tt.wantIDs, ids)
			var skipped []string
			for _, s := range snap.Skipped {
				skipped = append(skipped, s.Name)
			}
			require.Equal(t, tt.wantSkipped, skipped)
		})
	}
}

func TestReader_Read(t *testing.T) {
	t.Parallel()
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(inventoryObjects()...).Build()
	fs := &fleetv1alpha1.FleetStage{
		ObjectMeta: metav1.ObjectMeta{Name: "prod", Namespace: "project-a"},
		Spec: fleetv1alpha1.FleetStageSpec{Targets: fleetv1alpha1.TargetsSpec{Sources: []fleetv1alpha1.TargetSource{
			{Kind: fleetv1alpha1.KargoTargetSource},
		}}},
	}
	got, err := NewReader(c).Read(context.Background(), fs)
	require.NoError(t, err)
	require.Equal(t, []plan.Target{{ID: "store-1", Name: "store-1", Source: "KargoTarget",
		Params: map[string]string{"url": "https://s1"}}}, got)
}

func TestReader_listErrors(t *testing.T) {
	t.Parallel()
	boom := errors.New("connection refused")
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithInterceptorFuncs(interceptor.Funcs{
		List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error { return boom },
	}).Build()
	for _, kind := range []fleetv1alpha1.TargetSourceKind{
		fleetv1alpha1.ArgoCDClusterSource, fleetv1alpha1.KargoTargetSource, fleetv1alpha1.ClusterProfileSource,
	} {
		_, err := NewReader(c).ReadSources(context.Background(), "ns", []fleetv1alpha1.TargetSource{{Kind: kind}})
		require.ErrorIs(t, err, boom, kind)
	}
	// Inline sources need no List, so they never fail.
	snap, err := NewReader(c).ReadSources(context.Background(), "ns", []fleetv1alpha1.TargetSource{
		{Kind: fleetv1alpha1.InlineSource, Inline: []fleetv1alpha1.InlineTarget{{Name: "a"}}},
	})
	require.NoError(t, err)
	require.Len(t, snap.Targets, 1)

	fs := &fleetv1alpha1.FleetStage{Spec: fleetv1alpha1.FleetStageSpec{Targets: fleetv1alpha1.TargetsSpec{
		Sources: []fleetv1alpha1.TargetSource{{Kind: fleetv1alpha1.ArgoCDClusterSource}},
	}}}
	_, err = NewReader(c).Read(context.Background(), fs)
	require.ErrorContains(t, err, `error listing Argo CD cluster Secrets in namespace "argocd": connection refused`)
}
