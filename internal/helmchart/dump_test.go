package helmchart

import (
	"testing"

	"sigs.k8s.io/yaml"
)

func TestDump(t *testing.T) {
	objs, err := Render(Release{Name: "kargo-fleet", Namespace: "kargo-fleet"})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		b, _ := yaml.Marshal(o.Object)
		if o.GetKind() != "CustomResourceDefinition" {
			t.Log(string(b))
		} else {
			t.Log(o.GetName(), o.GetAnnotations(), o.GetLabels())
		}
	}
	t.Log(Lint("kargo-fleet", nil))
}
