package policy

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

func freightPolicy(name string, hold fleetv1alpha1.BlockedTargetsPolicy, rules ...fleetv1alpha1.FreightRule) *fleetv1alpha1.FreightPolicy {
	return &fleetv1alpha1.FreightPolicy{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), Generation: 1},
		Spec: fleetv1alpha1.FreightPolicySpec{Rules: rules, BlockedTargets: hold}}
}

var (
	pciRule = fleetv1alpha1.FreightRule{Name: "pci-digest", Targets: `target.labels.tier == "pci"`,
		Require: `all(freight.images, {.repoURL startsWith "registry.corp/pci/" && .digest != ""})`,
		Message: "PCI targets run only images from registry.corp/pci/ pinned by digest"}
	cnRule = fleetv1alpha1.FreightRule{Name: "cn-chart-2", Targets: `target.labels.region matches "^cn-"`,
		Require: `all(freight.charts, {semver(.version, "2.0") >= 0})`, AllowBreakGlass: true}
)

func rawJSON(t testing.TB, v any) apiextensionsv1.JSON {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return apiextensionsv1.JSON{Raw: b}
}

func kargoFreight(t testing.TB, name string, images []map[string]string, charts []map[string]string) *kargo.Freight {
	f := &kargo.Freight{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, i := range images {
		f.Images = append(f.Images, rawJSON(t, i))
	}
	for _, c := range charts {
		f.Charts = append(f.Charts, rawJSON(t, c))
	}
	return f
}

func TestCheck(t *testing.T) {
	compile := func(p *fleetv1alpha1.FreightPolicy) *Compiled {
		c, errs := Compile(p)
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		return c
	}
	pci := compile(freightPolicy("pci", "", pciRule))
	cn := compile(freightPolicy("china", fleetv1alpha1.BlockedTargetsSkip, cnRule))
	pinned := map[string]string{"repoURL": "registry.corp/pci/shop", "tag": "1.2", "digest": "sha256:abc"}
	tagged := map[string]string{"repoURL": "registry.corp/pci/shop", "tag": "1.2"}
	public := map[string]string{"repoURL": "docker.io/shop", "digest": "sha256:abc"}
	chart := func(v string) map[string]string {
		return map[string]string{"repoURL": "oci://charts", "name": "shop", "version": v}
	}
	for _, tc := range []struct {
		name      string
		freight   *kargo.Freight
		labels    map[string]string
		blocked   []string
		glass     bool
		hold      bool
		inMessage string
	}{
		{name: "pci target, pinned pci image", freight: kargoFreight(t, "f", []map[string]string{pinned}, nil),
			labels: map[string]string{"tier": "pci"}},
		{name: "pci target, image by tag", freight: kargoFreight(t, "f", []map[string]string{pinned, tagged}, nil),
			labels: map[string]string{"tier": "pci"}, blocked: []string{"pci/pci-digest"}, hold: true,
			inMessage: "rule pci-digest of FreightPolicy pci: PCI targets run only images from registry.corp/pci/ pinned by digest"},
		{name: "pci target, public image", freight: kargoFreight(t, "f", []map[string]string{public}, nil),
			labels: map[string]string{"tier": "pci"}, blocked: []string{"pci/pci-digest"}, hold: true},
		{name: "ungoverned target runs anything", freight: kargoFreight(t, "f", []map[string]string{public}, nil),
			labels: map[string]string{"tier": "general"}},
		{name: "cn target, old chart", freight: kargoFreight(t, "f", nil, []map[string]string{chart("1.9.3")}),
			labels: map[string]string{"region": "cn-north-1"}, blocked: []string{"china/cn-chart-2"}, glass: true,
			inMessage: "the Freight does not satisfy all(freight.charts"},
		{name: "cn target, chart 2.0", freight: kargoFreight(t, "f", nil, []map[string]string{chart("v2.0.0")}),
			labels: map[string]string{"region": "cn-north-1"}},
		{name: "cn target, chart version unreadable: blocked", freight: kargoFreight(t, "f", nil, []map[string]string{chart("latest")}),
			labels: map[string]string{"region": "cn-north-1"}, blocked: []string{"china/cn-chart-2"}, glass: true,
			inMessage: `its require expression could not be evaluated: semver: "latest" is not a version`},
		{name: "both rules block", freight: kargoFreight(t, "f", []map[string]string{public}, []map[string]string{chart("1.0")}),
			labels: map[string]string{"region": "cn-north-1", "tier": "pci"}, blocked: []string{"pci/pci-digest", "china/cn-chart-2"},
			hold: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := FreightOf(tc.freight)
			if err != nil {
				t.Fatal(err)
			}
			var k Checker
			v := k.Check([]*Compiled{pci, cn}, &f, nil, &Target{ID: "t", Name: "t", Labels: tc.labels})
			var got []string
			for _, b := range v.Blocks {
				got = append(got, b.Policy+"/"+b.Rule)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.blocked) {
				t.Fatalf("blocks = %v, want %v (%s)", got, tc.blocked, v)
			}
			if v.Allowed() != (len(tc.blocked) == 0) {
				t.Errorf("Allowed() = %v", v.Allowed())
			}
			if !v.Allowed() && v.BreakGlassAllowed() != tc.glass {
				t.Errorf("BreakGlassAllowed() = %v, want %v", v.BreakGlassAllowed(), tc.glass)
			}
			if v.Hold() != tc.hold {
				t.Errorf("Hold() = %v, want %v", v.Hold(), tc.hold)
			}
			if !strings.Contains(v.String(), tc.inMessage) {
				t.Errorf("message %q lacks %q", v.String(), tc.inMessage)
			}
		})
	}
}

func TestCompileNamesTheField(t *testing.T) {
	for _, tc := range []struct {
		rule fleetv1alpha1.FreightRule
		want string
	}{
		{fleetv1alpha1.FreightRule{Name: "a", Require: `freight.imagez == nil`}, "spec.rules[0].require"},
		{fleetv1alpha1.FreightRule{Name: "a", Targets: `target.labels.tier == 3`, Require: "true"}, "spec.rules[0].targets"},
		{fleetv1alpha1.FreightRule{Name: "a", Require: `len(freight.images)`}, "spec.rules[0].require"},
		{fleetv1alpha1.FreightRule{Name: "a", Require: `let x = 1; true`}, "let is not allowed"},
		{fleetv1alpha1.FreightRule{Name: "a", Require: `all(freight.images, {all(freight.charts, {true})})`}, "predicate inside another"},
		{fleetv1alpha1.FreightRule{Name: "a", Require: `semver(freight.name)`}, "spec.rules[0].require"},
	} {
		_, errs := Compile(freightPolicy("p", "", tc.rule))
		if len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), tc.want) {
			t.Errorf("Compile(%+v) = %v, want an error naming %q", tc.rule, errs, tc.want)
		}
	}
	bad := freightPolicy("p", "", pciRule)
	bad.Spec.NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Bogus"}}}
	if _, errs := Compile(bad); len(errs) == 0 || errs[0].Field != "spec.namespaceSelector" {
		t.Errorf("a bad namespace selector: %v", errs)
	}
}

func TestCacheGoverningAndFailingClosed(t *testing.T) {
	pci := freightPolicy("pci", "", pciRule)
	pci.UID = "u1"
	pci.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"compliance": "pci"}}
	broken := freightPolicy("broken", fleetv1alpha1.BlockedTargetsSkip, fleetv1alpha1.FreightRule{Name: "x", Require: "nonsense +"})
	broken.UID = "u2"
	broken.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "b"}}
	var c Cache
	all := []fleetv1alpha1.FreightPolicy{*pci, *broken}
	if got := c.Governing(all, map[string]string{"team": "a"}); len(got) != 0 {
		t.Fatalf("namespace team=a is governed by %d policies, want none", len(got))
	}
	got := c.Governing(all, map[string]string{"compliance": "pci", "team": "b"})
	if len(got) != 2 || got[0].Name != "broken" || got[1].Name != "pci" {
		t.Fatalf("governing = %v, want broken and pci in name order", got)
	}
	var k Checker
	f := Freight{Name: "f"}
	v := k.Check(got[:1], &f, nil, &Target{ID: "any"})
	if v.Allowed() || !v.Hold() || v.BreakGlassAllowed() || !strings.Contains(v.String(), "does not compile") {
		t.Errorf("a broken policy must block every target, hold and refuse break-glass: %s", v)
	}
	// A new generation is compiled again; an unchanged one is not.
	first := got[1]
	if again := c.Governing(all, map[string]string{"compliance": "pci"}); again[0] != first {
		t.Error("an unchanged policy was compiled again")
	}
	pci.Generation = 2
	pci.Spec.Rules[0].Require = "true"
	all[0] = *pci
	again := c.Governing(all, map[string]string{"compliance": "pci"})
	if again[0] == first {
		t.Fatal("a new generation was not compiled again")
	}
	if v := k.Check(again, &f, nil, &Target{ID: "t", Labels: map[string]string{"tier": "pci"}}); !v.Allowed() {
		t.Errorf("the new generation's rule was not used: %s", v)
	}
}

func TestFreightOfRefusesMalformedArtifacts(t *testing.T) {
	f := &kargo.Freight{ObjectMeta: metav1.ObjectMeta{Name: "f"}, Images: []apiextensionsv1.JSON{{Raw: []byte(`{"repoURL": 3}`)}}}
	if _, err := FreightOf(f); err == nil || !strings.Contains(err.Error(), "images[0]") {
		t.Errorf("FreightOf = %v, want an error naming images[0]", err)
	}
}
