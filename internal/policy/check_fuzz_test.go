package policy

import (
	"testing"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

// FuzzCompileAndCheck feeds arbitrary rule expressions and target labels:
// compiling never panics, and a rule that compiles is evaluated to a
// verdict (an evaluation error blocks) without panicking.
func FuzzCompileAndCheck(f *testing.F) {
	f.Add(pciRule.Targets, pciRule.Require, "pci", "registry.corp/pci/x", "sha256:1", "1.0")
	f.Add(cnRule.Targets, cnRule.Require, "cn-north", "r", "", "latest")
	f.Add(`target.params.x == "1"`, `freight.charts[9].version == ""`, "", "", "", "")
	f.Add(`"a" in target.labels`, `semver(freight.alias, "1.0.0") < 0`, "a", "b", "c", "d")
	f.Fuzz(func(t *testing.T, targets, require, label, repo, digest, chartVersion string) {
		p := freightPolicy("fuzz", "", fleetv1alpha1.FreightRule{Name: "r", Targets: targets, Require: require})
		c, errs := Compile(p)
		if len(errs) > 0 {
			return
		}
		var k Checker
		fr := Freight{Name: "f", Alias: chartVersion, Images: []Image{{RepoURL: repo, Digest: digest}},
			Charts: []Chart{{Version: chartVersion}}}
		v := k.Check([]*Compiled{c}, &fr, nil, &Target{ID: "t", Labels: map[string]string{"tier": label, "region": label}})
		for _, b := range v.Blocks {
			if b.Policy != "fuzz" || b.Rule != "r" || b.Reason == "" {
				t.Fatalf("malformed block %+v", b)
			}
		}
	})
}
