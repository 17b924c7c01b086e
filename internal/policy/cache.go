package policy

import (
	"slices"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

// Cache keeps compiled FreightPolicies by UID and generation, so a
// reconcile or an admission compiles a policy only when it changed. It is
// safe for concurrent use.
type Cache struct {
	mu    sync.Mutex
	byUID map[types.UID]*Compiled
}

// Governing compiles (or takes from the cache) the policies that govern a
// namespace with the given labels, ordered by name. A policy that does not
// compile (its admission webhook was bypassed) blocks every target of the
// namespaces it selects (all of them when even its selector is invalid):
// compliance fails closed.
func (c *Cache) Governing(policies []fleetv1alpha1.FreightPolicy, namespaceLabels map[string]string) []*Compiled {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byUID == nil {
		c.byUID = map[types.UID]*Compiled{}
	}
	seen := make(map[types.UID]bool, len(policies))
	var out []*Compiled
	for i := range policies {
		p := &policies[i]
		seen[p.UID] = true
		cp := c.byUID[p.UID]
		if cp == nil || cp.Generation != p.Generation || p.UID == "" {
			cp = compileOrBroken(p)
			if p.UID != "" {
				c.byUID[p.UID] = cp
			}
		}
		if cp.Governs(namespaceLabels) {
			out = append(out, cp)
		}
	}
	for uid := range c.byUID {
		if !seen[uid] {
			delete(c.byUID, uid)
		}
	}
	slices.SortFunc(out, func(a, b *Compiled) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// compileOrBroken compiles p, or stands in a policy that blocks every
// target of every namespace, saying why.
func compileOrBroken(p *fleetv1alpha1.FreightPolicy) *Compiled {
	cp, errs := Compile(p)
	if len(errs) == 0 {
		return cp
	}
	always, _ := compileRule("false")
	namespaces := labels.Everything()
	if p.Spec.NamespaceSelector != nil {
		if sel, err := metav1.LabelSelectorAsSelector(p.Spec.NamespaceSelector); err == nil {
			namespaces = sel
		}
	}
	return &Compiled{Name: p.Name, UID: p.UID, Generation: p.Generation, Hold: true, namespaces: namespaces,
		rules: []rule{{name: "invalid-policy", check: always,
			message: "the FreightPolicy does not compile, so it blocks every target until it is fixed: " + errs.ToAggregate().Error()}}}
}
