package inventory

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
)

// FuzzConverters feeds arbitrary inventory objects to every converter:
// nothing panics, no Secret data but name, server and project and no
// reserved annotation reaches a target, every target ID is a label value,
// and CheckExpressions refuses every target carrying a Kargo expression.
func FuzzConverters(f *testing.F) {
	f.Add("eu-1", "https://eu-1", "payments", `{"bearerToken":"x"}`, "example.com/cell", "7", `{"url":"https://s1","n":3}`)
	f.Add("", "https://x", "", "", "kubectl.kubernetes.io/last-applied-configuration", `{"data":{"config":"secret"}}`, `{}`)
	f.Add("${{ secret('db') }}", "https://x", "", "", "example.com/a", "${{ vars.x }}", `{"p":"${{ 1 }}"}`)
	f.Add("Prod_EU_1!!", "", "p", "c", "server", "annotation-loses", `{"server":null,"list":[1,2]}`)
	f.Add(strings.Repeat("x", 300), "s", "", "", "a", "b", `not json`)
	f.Fuzz(func(t *testing.T, name, server, project, config, annotation, value, params string) {
		secret := corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "argocd", Annotations: map[string]string{annotation: value}},
			Data: map[string][]byte{"name": []byte(name), "server": []byte(server), "project": []byte(project),
				"config": []byte(config), "extra": []byte(config)},
		}
		keys := []string{annotation, "kubectl.kubernetes.io/last-applied-configuration"}
		var all []plan.Target
		argo, _ := FromArgoCDSecrets([]corev1.Secret{secret}, keys)
		for _, tg := range argo {
			for k, v := range tg.Params {
				require.NotContains(t, k, ReservedAnnotationPrefix)
				switch k {
				case ParamServer, ParamProject:
				default:
					require.Equal(t, annotation, k, "params hold only server, project and listed annotations")
					require.Equal(t, value, v)
				}
			}
		}
		all = append(all, argo...)

		var raw map[string]apiextensionsv1.JSON
		if json.Unmarshal([]byte(params), &raw) == nil {
			target := kargo.Target{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{annotation: value}},
				Spec: kargo.TargetSpec{Params: raw}}
			all = append(all, FromKargoTargets([]kargo.Target{target}, keys)...)
		}
		profile := ClusterProfile{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{annotation: value}}}
		profile.Status.Properties = []ClusterProperty{{Name: project, Value: config}}
		all = append(all, FromClusterProfiles([]ClusterProfile{profile}, keys)...)
		all = append(all, FromInline([]fleetv1alpha1.InlineTarget{{Name: name, Params: map[string]string{project: config}}})...)

		unsafe := false
		for _, tg := range all {
			require.LessOrEqual(t, len(tg.ID), 63, "target IDs are label values")
			if strings.Contains(tg.Name, ExpressionMarker) {
				unsafe = true
			}
			for k, v := range tg.Params {
				require.False(t, IsReservedAnnotation(k) && k != project, "reserved annotation %q copied", k)
				if strings.Contains(k, ExpressionMarker) || strings.Contains(v, ExpressionMarker) {
					unsafe = true
				}
			}
		}
		err := CheckExpressions(all)
		require.Equal(t, unsafe, err != nil, "CheckExpressions: %v", err)
	})
}
