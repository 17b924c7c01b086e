package policy

import (
	"fmt"
	"testing"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

// BenchmarkCheck1000Targets checks one Freight of three images against a
// 1,000-target fleet under two policies (three rules): what a rollout's
// reconcile or `kargo-fleet plan` spends on compliance.
func BenchmarkCheck1000Targets(b *testing.B) {
	pci, _ := Compile(freightPolicy("pci", "", pciRule))
	cn, _ := Compile(freightPolicy("china", "", cnRule, fleetv1alpha1.FreightRule{Name: "no-latest",
		Require: `none(freight.images, {.tag == "latest"})`}))
	policies := []*Compiled{pci, cn}
	f := Freight{Name: "f", Images: []Image{
		{RepoURL: "registry.corp/pci/a", Tag: "1", Digest: "sha256:1"},
		{RepoURL: "registry.corp/pci/b", Tag: "2", Digest: "sha256:2"},
		{RepoURL: "registry.corp/pci/c", Tag: "3", Digest: "sha256:3"}},
		Charts: []Chart{{Name: "c", Version: "2.3.4"}}}
	targets := make([]Target, 1000)
	tiers := []string{"pci", "general", "critical"}
	for i := range targets {
		targets[i] = Target{ID: fmt.Sprint("t-", i), Labels: map[string]string{"tier": tiers[i%3], "region": fmt.Sprint("cn-", i%4)}}
	}
	var k Checker
	b.ReportAllocs()
	for b.Loop() {
		for i := range targets {
			if v := k.Check(policies, &f, nil, &targets[i]); !v.Allowed() {
				b.Fatal(v)
			}
		}
	}
}
