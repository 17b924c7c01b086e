package inventory

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

// TestDefaultKinds_matchTheAPI keeps the table and the API's enum of source
// kinds in step: the CRD accepts exactly the kinds the table holds.
func TestDefaultKinds_matchTheAPI(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../charts/kargo-fleet/files/crds/fleet.kargo-fleet.io_fleetstages.yaml")
	require.NoError(t, err)
	var crd apiextensionsv1.CustomResourceDefinition
	require.NoError(t, yaml.Unmarshal(raw, &crd))
	kind := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.
		Properties["spec"].Properties["targets"].Properties["sources"].Items.Schema.Properties["kind"]
	var enum []fleetv1alpha1.TargetSourceKind
	for _, v := range kind.Enum {
		var s fleetv1alpha1.TargetSourceKind
		require.NoError(t, json.Unmarshal(v.Raw, &s))
		enum = append(enum, s)
	}
	require.ElementsMatch(t, enum, DefaultKinds().Names())
}

// TestDefaultKinds_areConsistent checks every entry reading objects: its
// Go types are registered by the table, its object and list are of its GVK,
// and it names what the webhook reviews and the messages say.
func TestDefaultKinds_areConsistent(t *testing.T) {
	t.Parallel()
	kinds := DefaultKinds()
	s := runtime.NewScheme()
	require.NoError(t, kinds.AddToScheme(s))
	core := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(core))
	for i := range kinds {
		k := &kinds[i]
		require.NotEmpty(t, k.Description, k.Name)
		if !k.ReadsObjects() {
			require.Equal(t, fleetv1alpha1.InlineSource, k.Name, "only Inline reads no objects")
			continue
		}
		require.NotEmpty(t, k.Resource, k.Name)
		scheme := s
		if k.AddToScheme == nil {
			scheme = core
		}
		gvks, _, err := scheme.ObjectKinds(k.Object)
		require.NoError(t, err, k.Name)
		require.Equal(t, k.GVK, gvks[0], "%s: Object is of GVK", k.Name)
		gvks, _, err = scheme.ObjectKinds(k.List.newList())
		require.NoError(t, err, k.Name)
		require.Equal(t, k.GVK.Kind+"List", gvks[0].Kind, "%s: List lists the kind", k.Name)
	}
	require.NotSame(t, &DefaultKinds()[0], &kinds[0], "each call returns its own table")
}

func TestKinds_Validate(t *testing.T) {
	t.Parallel()
	path := field.NewPath("spec", "targets", "sources")
	errs := DefaultKinds().Validate([]fleetv1alpha1.TargetSource{
		{Kind: fleetv1alpha1.ArgoCDClusterSource}, {Kind: "Rancher"}, {Kind: ""}, {Kind: fleetv1alpha1.InlineSource},
	}, path)
	require.Len(t, errs, 1, "an empty kind is the planner's to report")
	require.Equal(t, "spec.targets.sources[1].kind", errs[0].Field)
	require.Equal(t, field.ErrorTypeNotSupported, errs[0].Type)
	require.Contains(t, errs[0].Detail, `"ArgoCDCluster", "KargoTarget", "ClusterProfile", "Inline"`)
}

func TestKind_Namespace(t *testing.T) {
	t.Parallel()
	kinds := DefaultKinds()
	get := func(name fleetv1alpha1.TargetSourceKind) *Kind {
		k, ok := kinds.Get(name)
		require.True(t, ok, name)
		return k
	}
	tests := []struct {
		kind fleetv1alpha1.TargetSourceKind
		src  fleetv1alpha1.TargetSource
		want string
	}{
		{kind: fleetv1alpha1.ArgoCDClusterSource, want: "argocd"},
		{kind: fleetv1alpha1.ArgoCDClusterSource, src: fleetv1alpha1.TargetSource{Namespace: "gitops"}, want: "gitops"},
		{kind: fleetv1alpha1.KargoTargetSource, want: "shop"},
		{kind: fleetv1alpha1.ClusterProfileSource, src: fleetv1alpha1.TargetSource{Namespace: "fleet-system"}, want: "fleet-system"},
		{kind: fleetv1alpha1.InlineSource, src: fleetv1alpha1.TargetSource{Namespace: "ignored"}, want: ""},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, get(tt.kind).Namespace("shop", &tt.src), "%s %+v", tt.kind, tt.src)
	}
}
