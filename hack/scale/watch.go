package main

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/envtest"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// promoSeen is what the watch saw of one Promotion, stamped with local
// receive times: creationTimestamp has a resolution of one second, too
// coarse for sub-second latencies.
type promoSeen struct {
	rollout, wave string
	// stage and freight are what the Promotion promotes.
	stage, freight string
	// created is the Promotion's creationTimestamp (the apiserver's clock,
	// whole seconds); added is when the watch first showed it.
	created  time.Time
	added    time.Time
	finished time.Time
	phase    kargo.PromotionPhase
}

// rolloutSeen is what the watch saw of one FleetRollout.
type rolloutSeen struct {
	added    time.Time
	breached time.Time // ThresholdBreached first True
	phases   map[fleetv1alpha1.RolloutPhase]time.Time
	freight  string
	dir      fleetv1alpha1.RolloutDirection
	// slots records, per wave, how many targets were in flight while the
	// wave progressed, from the rollout's status writes.
	slots map[string]*slotUse
}

// slotUse integrates a wave's in-flight count over the time it progressed.
type slotUse struct {
	at          time.Time
	inFlight    int32
	progressing bool
	busy, span  float64 // target·seconds in flight, seconds progressing
}

// mean is the average number of targets in flight while the wave progressed.
func (u *slotUse) mean() float64 {
	if u == nil || u.span == 0 {
		return 0
	}
	return u.busy / u.span
}

// sample adds the time since the last status seen at the count seen then.
func (u *slotUse) sample(now time.Time, w fleetv1alpha1.WaveProgress) {
	if u.progressing {
		dt := now.Sub(u.at).Seconds()
		u.busy += float64(u.inFlight) * dt
		u.span += dt
	}
	u.at, u.inFlight, u.progressing = now, w.InFlight, w.Phase == fleetv1alpha1.WaveProgressing
}

// observer watches the Project through a cache of its own (as cluster
// administrator) and records when things happen.
type observer struct {
	cache.Cache
	mu       sync.Mutex
	promos   map[string]*promoSeen
	rollouts map[string]*rolloutSeen
	// verified is when a Stage was first seen running a Freight with a
	// successful verification, by verifiedKey.
	verified map[string]time.Time
}

// verifiedKey keys observer.verified.
func verifiedKey(stage, freight string) string { return stage + "/" + freight }

func startObserver(ctx context.Context, cfg *rest.Config, namespace string) (*observer, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 200, 400
	c, err := cache.New(cfg, cache.Options{
		Scheme:            envtest.NewScheme(),
		DefaultNamespaces: map[string]cache.Config{namespace: {}},
	})
	if err != nil {
		return nil, fmt.Errorf("error creating the observer's cache: %w", err)
	}
	o := &observer{Cache: c, promos: map[string]*promoSeen{}, rollouts: map[string]*rolloutSeen{}, verified: map[string]time.Time{}}
	pi, err := c.GetInformer(ctx, &kargo.Promotion{})
	if err != nil {
		return nil, err
	}
	if _, err := pi.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { o.promotion(obj) },
		UpdateFunc: func(_, obj any) { o.promotion(obj) },
	}); err != nil {
		return nil, err
	}
	ri, err := c.GetInformer(ctx, &fleetv1alpha1.FleetRollout{})
	if err != nil {
		return nil, err
	}
	if _, err := ri.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { o.rollout(obj) },
		UpdateFunc: func(_, obj any) { o.rollout(obj) },
	}); err != nil {
		return nil, err
	}
	si, err := c.GetInformer(ctx, &kargo.Stage{})
	if err != nil {
		return nil, err
	}
	if _, err := si.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { o.stage(obj) },
		UpdateFunc: func(_, obj any) { o.stage(obj) },
	}); err != nil {
		return nil, err
	}
	if _, err := c.GetInformer(ctx, &fleetv1alpha1.FleetStage{}); err != nil {
		return nil, err
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("the observer's cache did not sync")
	}
	return o, nil
}

func (o *observer) promotion(obj any) {
	now := time.Now()
	p, ok := obj.(*kargo.Promotion)
	if !ok {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	s := o.promos[p.Name]
	if s == nil {
		s = &promoSeen{rollout: p.Labels[fleetv1alpha1.RolloutLabel], wave: p.Labels[fleetv1alpha1.WaveLabel],
			stage: p.Spec.Stage, freight: p.Spec.Freight, created: p.CreationTimestamp.Time, added: now}
		o.promos[p.Name] = s
	}
	if p.Status.Phase.IsTerminal() && s.finished.IsZero() {
		s.finished, s.phase = now, p.Status.Phase
	}
}

// stage records when a Stage is first seen verified on the Freight it
// runs: the end of the time a target holds one of its wave's slots.
func (o *observer) stage(obj any) {
	now := time.Now()
	st, ok := obj.(*kargo.Stage)
	if !ok {
		return
	}
	v := st.LastVerification()
	if v == nil || v.Phase != kargo.VerificationSuccessful {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, f := range st.CurrentFreightNames() {
		if k := verifiedKey(st.Name, f); o.verified[k].IsZero() {
			o.verified[k] = now
		}
	}
}

// verifiedAt returns when stage was first seen verified on freight.
func (o *observer) verifiedAt(stage, freight string) time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.verified[verifiedKey(stage, freight)]
}

func (o *observer) rollout(obj any) {
	now := time.Now()
	ro, ok := obj.(*fleetv1alpha1.FleetRollout)
	if !ok {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	s := o.rollouts[ro.Name]
	if s == nil {
		s = &rolloutSeen{added: now, phases: map[fleetv1alpha1.RolloutPhase]time.Time{},
			freight: ro.Spec.Freight.Name, dir: ro.Spec.Direction, slots: map[string]*slotUse{}}
		o.rollouts[ro.Name] = s
	}
	for _, w := range ro.Status.Waves {
		if s.slots[w.Name] == nil {
			s.slots[w.Name] = &slotUse{}
		}
		s.slots[w.Name].sample(now, w)
	}
	if _, ok := s.phases[ro.Status.Phase]; !ok && ro.Status.Phase != "" {
		s.phases[ro.Status.Phase] = now
	}
	if s.breached.IsZero() && meta.IsStatusConditionTrue(ro.Status.Conditions, fleetv1alpha1.ThresholdBreachedCondition) {
		s.breached = now
	}
}

// findRollout returns the name and record of the rollout of freight in
// direction dir, if seen.
func (o *observer) findRollout(freight string, dir fleetv1alpha1.RolloutDirection) (string, *rolloutSeen) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for name, s := range o.rollouts {
		if s.freight == freight && s.dir == dir {
			cp := *s
			cp.phases = maps.Clone(s.phases)
			cp.slots = map[string]*slotUse{}
			for w, u := range s.slots {
				c := *u
				cp.slots[w] = &c
			}
			return name, &cp
		}
	}
	return "", nil
}

// rolloutPromotions returns copies of the records of a rollout's target
// Promotions.
func (o *observer) rolloutPromotions(rollout string) []promoSeen {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []promoSeen
	for _, s := range o.promos {
		if s.rollout == rollout {
			out = append(out, *s)
		}
	}
	return out
}

// until polls cond every 50 ms until it holds, the context ends or timeout.
func until(ctx context.Context, timeout time.Duration, what string, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s waiting for %s", timeout, what)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
