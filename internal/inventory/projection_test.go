package inventory

import (
	"maps"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// euSecret is an Argo CD cluster Secret of the eu region, selected by
// region=eu, whose cell annotation a source may copy.
func euSecret(mutate func(s *corev1.Secret)) *corev1.Secret {
	s := clusterSecret("eu-1", map[string]string{"name": "eu-1", "server": "https://eu-1", "config": `{"bearerToken":"a"}`},
		map[string]string{ArgoCDSecretTypeLabel: ArgoCDSecretTypeCluster, "region": "eu"},
		map[string]string{"example.com/cell": "7", "example.com/owner": "team-a"})
	s.ResourceVersion = "1"
	if mutate != nil {
		mutate(&s)
	}
	return &s
}

func TestKind_SourceChanged(t *testing.T) {
	t.Parallel()
	k, _ := DefaultKinds().Get(fleetv1alpha1.ArgoCDClusterSource)
	eu := &fleetv1alpha1.TargetSource{Kind: fleetv1alpha1.ArgoCDClusterSource,
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": "eu"}}, Annotations: []string{"example.com/cell"}}
	us := &fleetv1alpha1.TargetSource{Kind: fleetv1alpha1.ArgoCDClusterSource,
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": "us"}}}
	invalid := &fleetv1alpha1.TargetSource{Kind: fleetv1alpha1.ArgoCDClusterSource,
		Selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "region", Operator: "Bogus"}}}}
	tests := []struct {
		name          string
		src           *fleetv1alpha1.TargetSource
		before, after *corev1.Secret
		want          bool
		wantEqual     bool
	}{
		{name: "token rotated", src: eu, before: euSecret(nil), after: euSecret(func(s *corev1.Secret) {
			s.Data["config"] = []byte(`{"bearerToken":"b"}`)
			s.ResourceVersion = "2"
			s.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "rotator"}}
		}), want: false, wantEqual: true},
		{name: "rotated through kubectl apply: its last-applied copy changes", src: eu, before: euSecret(nil),
			after: euSecret(func(s *corev1.Secret) {
				s.Annotations = maps.Clone(s.Annotations)
				s.Annotations["kubectl.kubernetes.io/last-applied-configuration"] = `{"data":{"config":"b"}}`
			}), want: false, wantEqual: true},
		{name: "an annotation the source does not copy", src: eu, before: euSecret(nil),
			after: euSecret(func(s *corev1.Secret) { s.Annotations = map[string]string{"example.com/cell": "7"} }), want: false},
		{name: "an annotation the source copies", src: eu, before: euSecret(nil),
			after: euSecret(func(s *corev1.Secret) { s.Annotations = map[string]string{"example.com/cell": "8"} }), want: true},
		{name: "server", src: eu, before: euSecret(nil),
			after: euSecret(func(s *corev1.Secret) { s.Data["server"] = []byte("https://eu-1b") }), want: true},
		{name: "project", src: eu, before: euSecret(nil),
			after: euSecret(func(s *corev1.Secret) { s.Data["project"] = []byte("payments") }), want: true},
		{name: "cluster name", src: eu, before: euSecret(nil),
			after: euSecret(func(s *corev1.Secret) { s.Data["name"] = []byte("eu-one") }), want: true},
		{name: "a label the selector does not read, which the target carries", src: eu, before: euSecret(nil),
			after: euSecret(func(s *corev1.Secret) {
				s.Labels = map[string]string{ArgoCDSecretTypeLabel: "cluster", "region": "eu", "tier": "gold"}
			}),
			want: true},
		{name: "leaves the selection", src: eu, before: euSecret(nil),
			after: euSecret(func(s *corev1.Secret) { s.Labels = map[string]string{ArgoCDSecretTypeLabel: "cluster", "region": "us"} }),
			want:  true},
		{name: "moves between two other sources' selections: not this one's", src: &fleetv1alpha1.TargetSource{
			Kind: fleetv1alpha1.ArgoCDClusterSource, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": "ap"}}},
			before: euSecret(nil),
			after:  euSecret(func(s *corev1.Secret) { s.Labels = map[string]string{ArgoCDSecretTypeLabel: "cluster", "region": "us"} }),
			want:   false},
		{name: "enters the selection", src: us, before: euSecret(nil),
			after: euSecret(func(s *corev1.Secret) { s.Labels = map[string]string{ArgoCDSecretTypeLabel: "cluster", "region": "us"} }),
			want:  true},
		{name: "unselected before and after", src: us, before: euSecret(nil),
			after: euSecret(func(s *corev1.Secret) { s.Data["server"] = []byte("https://eu-1b") }), want: false},
		{name: "becomes a target: server set", src: eu, before: euSecret(func(s *corev1.Secret) { delete(s.Data, "server") }),
			after: euSecret(nil), want: true},
		{name: "stops being one", src: eu, before: euSecret(nil),
			after: euSecret(func(s *corev1.Secret) { delete(s.Data, "server") }), want: true},
		{name: "skipped before and after", src: eu, before: euSecret(func(s *corev1.Secret) { delete(s.Data, "server") }),
			after: euSecret(func(s *corev1.Secret) { delete(s.Data, "server"); s.Data["name"] = []byte("x") }), want: false,
			wantEqual: true},
		{name: "created, selected", src: eu, after: euSecret(nil), want: true},
		{name: "created, not selected", src: us, after: euSecret(nil), want: false},
		{name: "deleted, selected", src: eu, before: euSecret(nil), want: true},
		{name: "an invalid selector counts as a change", src: invalid, before: euSecret(nil), after: euSecret(nil), want: true, wantEqual: true},
	}
	project := func(s *corev1.Secret) *Projection {
		if s == nil {
			return nil
		}
		p, ok := k.Project(s)
		require.True(t, ok)
		return &p
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			before, after := project(tt.before), project(tt.after)
			require.Equal(t, tt.want, k.SourceChanged(tt.src, before, after))
			if before != nil && after != nil {
				require.Equal(t, tt.wantEqual, before.Equal(after), "Equal")
			}
		})
	}
}

// TestProjection_Target: the Reader's targets are the projections' targets,
// so what SourceChanged compares is what a plan reads.
func TestProjection_Target(t *testing.T) {
	t.Parallel()
	secrets := []corev1.Secret{*euSecret(nil), *euSecret(func(s *corev1.Secret) { s.Name = "broken"; delete(s.Data, "server") })}
	targets, skipped := FromArgoCDSecrets(secrets, []string{"example.com/cell"})
	p := ProjectArgoCDSecret(&secrets[0])
	require.Equal(t, p.Target([]string{"example.com/cell"}), targets[0])
	require.Len(t, targets, 1)
	broken := ProjectArgoCDSecret(&secrets[1])
	require.Equal(t, []SkippedObject{broken.Skipped()}, skipped)

	target := p.Target([]string{"example.com/cell"})
	target.Labels["region"] = "changed"
	target.Params["server"] = "changed"
	require.Equal(t, "eu", secrets[0].Labels["region"], "a target never shares its labels with the object")
	require.Equal(t, "https://eu-1", p.Params["server"], "nor its params with the projection")
}

func TestKind_Project(t *testing.T) {
	t.Parallel()
	kinds := DefaultKinds()
	argo, _ := kinds.Get(fleetv1alpha1.ArgoCDClusterSource)
	_, ok := argo.Project(&kargo.Target{})
	require.False(t, ok, "an object of another kind has no projection")
	inline, _ := kinds.Get(fleetv1alpha1.InlineSource)
	_, ok = inline.Project(&corev1.Secret{})
	require.False(t, ok, "inline sources read no objects")

	targets, _ := kinds.Get(fleetv1alpha1.KargoTargetSource)
	p, ok := targets.Project(&kargo.Target{ObjectMeta: metav1.ObjectMeta{Name: "store-1"},
		Spec: kargo.TargetSpec{Params: map[string]apiextensionsv1.JSON{"replicas": {Raw: []byte("3")}}}})
	require.True(t, ok)
	require.Equal(t, map[string]string{"replicas": "3"}, p.Params)

	profiles, _ := kinds.Get(fleetv1alpha1.ClusterProfileSource)
	cp := &ClusterProfile{ObjectMeta: metav1.ObjectMeta{Name: "eu-1"}, Status: ClusterProfileStatus{Version: ClusterVersion{Kubernetes: "1.31"}}}
	before, ok := profiles.Project(cp)
	require.True(t, ok)
	cp.ResourceVersion = "2"
	after, _ := profiles.Project(cp)
	require.True(t, before.Equal(&after))
	cp.Status.Version.Kubernetes = "1.32"
	after, _ = profiles.Project(cp)
	require.False(t, before.Equal(&after), "the reported version is a param")
}
