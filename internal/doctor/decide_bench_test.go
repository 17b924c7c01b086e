package doctor

import (
	"fmt"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// BenchmarkArgoCDAppsCheck times the pure part of the argocd-apps check:
// resolving and authorizing one Application per target Stage.
func BenchmarkArgoCDAppsCheck(b *testing.B) {
	steps := []kargo.PromotionStep{{Uses: "argocd-update", As: "sync", Config: &apiextensionsv1.JSON{Raw: []byte(
		`{"apps":[{"name":"guestbook-${{ vars.fleetTargetId }}","namespace":"argocd"}]}`)}}}
	for _, n := range []int{100, 1000, 10000} {
		apps := map[string][]AppMeta{}
		for i := range n {
			id := fmt.Sprintf("cluster-%05d", i)
			apps["argocd"] = append(apps["argocd"], AppMeta{Name: "guestbook-" + id,
				Annotations: map[string]string{kargo.AuthorizedStageAnnotation: "shop:prod." + id}})
		}
		index := map[string]*Applications{"argocd": NewApplications(apps["argocd"])}
		b.Run(fmt.Sprintf("targets=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for i := range n {
					id := fmt.Sprintf("cluster-%05d", i)
					stage := "prod." + id
					vars := StageVars([]kargo.ExpressionVariable{{Name: "fleetTargetId", Value: id}}, "shop", stage)
					refs, _ := ArgoCDAppRefs(steps, vars, "shop", stage)
					if p := AuthorizeApps("shop", stage, refs, index); len(p) > 0 {
						b.Fatal(p)
					}
				}
			}
		})
	}
}
