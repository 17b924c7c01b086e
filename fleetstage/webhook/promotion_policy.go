package webhook

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/fleetstage/controller/fleetplan"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
	"github.com/kargo-fleet/kargo-fleet/internal/policy"
	"github.com/kargo-fleet/kargo-fleet/internal/policyread"
	"github.com/kargo-fleet/kargo-fleet/internal/render"
)

// planTTL is how long the guard reuses a fleet's plan to find the target
// behind a target Stage: a rollout creates its targets' Promotions in
// bursts, and planning a large fleet for each would cost in proportion to
// the fleet per target.
const planTTL = 10 * time.Second

// promotionPolicies is the guard's view of the FreightPolicies: the
// policies and Freight artifacts (policyread) and the fleets' plans, from
// which a target Stage's target (its labels, params and source) is taken.
// Stage labels are not trusted: anyone who may write Stages writes them.
type promotionPolicies struct {
	read      *policyread.Reader
	inventory fleetplan.Inventory
	mu        sync.Mutex
	plans     map[types.UID]cachedPlan
}

type cachedPlan struct {
	generation int64
	at         time.Time
	targets    map[string]*plan.Target // by target Stage name
}

// WithFreightPolicies makes the guard refuse Promotions of Freight that a
// FreightPolicy keeps off the target, reading policies and Freight with
// read and the fleets' targets with inv.
func (g *PromotionGuard) WithFreightPolicies(read *policyread.Reader, inv fleetplan.Inventory) *PromotionGuard {
	g.policies = &promotionPolicies{read: read, inventory: inv, plans: map[types.UID]cachedPlan{}}
	return g
}

// policyVerdict checks a Promotion into a target Stage of fs against the
// FreightPolicies governing the Project; nil when none blocks it.
func (g *PromotionGuard) policyVerdict(ctx context.Context, fs *fleetv1alpha1.FleetStage, p *kargo.Promotion) (*policy.Verdict, error) {
	if g.policies == nil {
		return nil, nil
	}
	governing, err := g.policies.read.Governing(ctx, fs.Namespace)
	if err != nil || len(governing) == 0 {
		return nil, err
	}
	f, err := g.policies.read.Freight(ctx, fs.Namespace, p.Spec.Freight)
	if err != nil {
		return nil, err
	}
	t, err := g.policies.target(ctx, g, fs, p.Spec.Stage)
	if err != nil {
		return nil, err
	}
	var k policy.Checker
	v := k.Check(governing, &f, g.policies.read.Signatures(ctx, governing, &f), &t)
	if v.Allowed() {
		return nil, nil
	}
	return &v, nil
}

// target finds the target behind a target Stage in the fleet's plan. A
// Stage no planned target renders (a target that left) is checked as a
// target with no labels.
func (pp *promotionPolicies) target(ctx context.Context, g *PromotionGuard, fs *fleetv1alpha1.FleetStage, stage string) (policy.Target, error) {
	pp.mu.Lock()
	c, ok := pp.plans[fs.UID]
	pp.mu.Unlock()
	if !ok || c.generation != fs.Generation || time.Since(c.at) > planTTL {
		fp, err := fleetplan.Plan(ctx, g.reader, pp.inventory, fs)
		if err != nil {
			return policy.Target{}, err
		}
		c = cachedPlan{generation: fs.Generation, at: time.Now(), targets: map[string]*plan.Target{}}
		for i := range fp.Plan.Waves {
			for j := range fp.Plan.Waves[i].Members {
				t := &fp.Plan.Waves[i].Members[j]
				c.targets[render.TargetStageName(fs.Name, t.ID)] = t
			}
		}
		pp.mu.Lock()
		pp.plans[fs.UID] = c
		pp.mu.Unlock()
	}
	if t := c.targets[stage]; t != nil {
		return policy.TargetOf(t), nil
	}
	return policy.Target{Name: stage}, nil
}
