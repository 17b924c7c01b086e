package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetrollout"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/render"
)

// span is what the controller did during one phase.
type span struct {
	wall   time.Duration
	writes writeCounts
	cpu    float64 // controller CPU seconds
	peak   int64   // controller peak VmRSS, bytes
	sim    simCounts
}

// harness holds what every phase uses.
type harness struct {
	c     client.Client // cluster administrator, uncached
	obs   *observer
	ctrl  *controllerProc
	shape fleetShape
	wait  time.Duration
}

// measure runs fn and records the controller's writes, CPU and peak RSS
// over it. Writes are read once the controller has been quiet for 2 s, so
// the coalesced status writes that trail an event are counted too.
func (h *harness) measure(ctx context.Context, fn func() error) (span, error) {
	before, err := scrape(h.ctrl.metricsURL)
	if err != nil {
		return span{}, err
	}
	cpu0, sim0 := h.ctrl.cpuSeconds(), readSimCounts()
	h.ctrl.rss.mark()
	start := time.Now()
	if err := fn(); err != nil {
		return span{}, err
	}
	s := span{wall: time.Since(start)}
	after, err := h.quiesce(ctx)
	if err != nil {
		return span{}, err
	}
	s.writes = writesOf(after).minus(writesOf(before))
	s.cpu = h.ctrl.cpuSeconds() - cpu0
	s.peak = h.ctrl.rss.mark()
	s.sim = readSimCounts().minus(sim0)
	return s, nil
}

// quiesce waits until the controller's write count stays unchanged for 2 s
// (at most a minute) and returns the last scrape.
func (h *harness) quiesce(ctx context.Context) ([]sample, error) {
	var last []sample
	prev, stable := -1.0, time.Time{}
	err := until(ctx, time.Minute, "the controller to stop writing", func() (bool, error) {
		s, err := scrape(h.ctrl.metricsURL)
		if err != nil {
			return false, err
		}
		last = s
		n := writesOf(s).total()
		if n != prev {
			prev, stable = n, time.Now()
		}
		return time.Since(stable) >= 2*time.Second, nil
	})
	return last, err
}

// setup creates the FleetStage and waits until it is Ready and the
// simulator has initialised every target Stage.
type setupResult struct {
	span
	ready, settled time.Duration
	fleetStage     *fleetv1alpha1.FleetStage
}

func (h *harness) setup(ctx context.Context, targets []fleetv1alpha1.InlineTarget) (*setupResult, error) {
	res := &setupResult{}
	var err error
	res.span, err = h.measure(ctx, func() error {
		fs := h.shape.fleetStage(targets)
		start := time.Now()
		if err := h.c.Create(ctx, fs); err != nil {
			return fmt.Errorf("error creating the FleetStage: %w", err)
		}
		if err := until(ctx, h.wait, "the FleetStage to be Ready", func() (bool, error) {
			got := &fleetv1alpha1.FleetStage{}
			if err := h.obs.Get(ctx, client.ObjectKeyFromObject(fs), got); err != nil {
				return false, client.IgnoreNotFound(err)
			}
			res.fleetStage = got
			return meta.IsStatusConditionTrue(got.Status.Conditions, fleetv1alpha1.ReadyCondition), nil
		}); err != nil {
			return err
		}
		res.ready = time.Since(start)
		err := until(ctx, h.wait, "the simulator to initialise every target Stage", func() (bool, error) {
			list := &kargo.StageList{}
			if err := h.obs.List(ctx, list, client.MatchingLabels{fleetv1alpha1.RoleLabel: fleetv1alpha1.RoleTarget}); err != nil {
				return false, err
			}
			if len(list.Items) < h.shape.targets {
				return false, nil
			}
			for i := range list.Items {
				if len(list.Items[i].Status.Conditions) == 0 {
					return false, nil
				}
			}
			return true, nil
		})
		res.settled = time.Since(start)
		return err
	})
	return res, err
}

// rolloutResult is one forward rollout (and any rollback it triggered).
type rolloutResult struct {
	span
	name        string
	phase       fleetv1alpha1.RolloutPhase
	waves       []fleetv1alpha1.WaveProgress
	promotions  int
	rolloutWall time.Duration // first wave Promotion created -> rollout final (watch)
	bound       policyBound
	slots       map[string]*slotUse // by wave (watch)
}

// promote creates a Promotion of freight to the first wave Stage, as
// `kargo promote` does, and returns when it was created.
func (h *harness) promote(ctx context.Context, freight string) (time.Time, error) {
	p := kargo.NewPromotion(h.shape.namespace, render.WaveStageName(fleetName, "pilot"), freight, nil, nil)
	at := time.Now()
	if err := h.c.Create(ctx, p); err != nil {
		return at, fmt.Errorf("error promoting %s: %w", freight, err)
	}
	return at, nil
}

// waitRollout waits until the forward rollout of freight reaches a final
// phase and returns its name and the watch's record.
func (h *harness) waitRollout(ctx context.Context, freight string, dir fleetv1alpha1.RolloutDirection) (string, *rolloutSeen, fleetv1alpha1.RolloutPhase, error) {
	var (
		name  string
		seen  *rolloutSeen
		final fleetv1alpha1.RolloutPhase
	)
	err := until(ctx, h.wait, fmt.Sprintf("the %s rollout of %s to finish", dir, freight), func() (bool, error) {
		if name, seen = h.obs.findRollout(freight, dir); seen == nil {
			return false, nil
		}
		for p := range seen.phases {
			if p.IsFinal() {
				final = p
				return true, nil
			}
		}
		return false, nil
	})
	return name, seen, final, err
}

// rolloutGood promotes the good Freight and waits until every target runs
// it and the FleetStage records it as last good.
func (h *harness) rolloutGood(ctx context.Context) (*rolloutResult, error) {
	res := &rolloutResult{}
	var err error
	res.span, err = h.measure(ctx, func() error {
		at, err := h.promote(ctx, goodFreight)
		if err != nil {
			return err
		}
		name, seen, final, err := h.waitRollout(ctx, goodFreight, fleetv1alpha1.DirectionForward)
		if err != nil {
			return err
		}
		res.name, res.phase, res.rolloutWall, res.slots = name, final, seen.phases[final].Sub(at), seen.slots
		return until(ctx, h.wait, "the FleetStage to record the last good Freight", func() (bool, error) {
			fs := &fleetv1alpha1.FleetStage{}
			if err := h.obs.Get(ctx, client.ObjectKey{Namespace: h.shape.namespace, Name: fleetName}, fs); err != nil {
				return false, err
			}
			return fs.Status.LastGoodFreight != nil && fs.Status.LastGoodFreight.Name == goodFreight, nil
		})
	})
	if err != nil {
		return nil, err
	}
	return res, h.fillRollout(ctx, res)
}

func (h *harness) fillRollout(ctx context.Context, res *rolloutResult) error {
	ro := &fleetv1alpha1.FleetRollout{}
	if err := h.c.Get(ctx, client.ObjectKey{Namespace: h.shape.namespace, Name: res.name}, ro); err != nil {
		return err
	}
	res.waves = ro.Status.Waves
	res.promotions = len(h.obs.rolloutPromotions(res.name))
	var err error
	res.bound, err = h.boundOf(ctx, res.name)
	return err
}

// breachResult is the bad Freight's rollout, its halt and the automatic
// rollback.
type breachResult struct {
	span
	bad, rollback            rolloutResult
	crossing                 time.Time // the failure that crossed the threshold was seen
	breachSeen               time.Time // ThresholdBreached=True was seen
	breachCondition          time.Time // its lastTransitionTime (1 s resolution)
	lastBad, firstRollback   time.Time // last bad-rollout / first rollback Promotion seen
	rollbackDone             time.Time
	afterCrossing, afterSeen int // bad-rollout Promotions created after crossing / breachSeen
	canaryFailed             int
	badByWave                map[string]int
}

func (h *harness) rolloutBad(ctx context.Context) (*breachResult, error) {
	res := &breachResult{badByWave: map[string]int{}}
	var err error
	res.span, err = h.measure(ctx, func() error {
		at, err := h.promote(ctx, badFreight)
		if err != nil {
			return err
		}
		name, seen, final, err := h.waitRollout(ctx, badFreight, fleetv1alpha1.DirectionForward)
		if err != nil {
			return err
		}
		res.bad = rolloutResult{name: name, phase: final, rolloutWall: seen.phases[final].Sub(at)}
		res.breachSeen = seen.breached
		rbName, rbSeen, rbFinal, err := h.waitRollout(ctx, goodFreight, fleetv1alpha1.DirectionRollback)
		if err != nil {
			return err
		}
		if rbName != fleetrollout.RollbackName(name) {
			return fmt.Errorf("rollback %q is not the automatic rollback of %q", rbName, name)
		}
		res.rollback = rolloutResult{name: rbName, phase: rbFinal, rolloutWall: rbSeen.phases[rbFinal].Sub(rbSeen.added)}
		res.rollbackDone = rbSeen.phases[rbFinal]
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := h.fillRollout(ctx, &res.bad); err != nil {
		return nil, err
	}
	if err := h.fillRollout(ctx, &res.rollback); err != nil {
		return nil, err
	}
	ro := &fleetv1alpha1.FleetRollout{}
	if err := h.c.Get(ctx, client.ObjectKey{Namespace: h.shape.namespace, Name: res.bad.name}, ro); err != nil {
		return nil, err
	}
	if c := meta.FindStatusCondition(ro.Status.Conditions, fleetv1alpha1.ThresholdBreachedCondition); c != nil {
		res.breachCondition = c.LastTransitionTime.Time
	}
	h.judgeBreach(res)
	return res, nil
}

// judgeBreach finds, from the watch's records, the failure that crossed the
// canary threshold and what was created after it.
func (h *harness) judgeBreach(res *breachResult) {
	var failures []time.Time
	for _, p := range h.obs.rolloutPromotions(res.bad.name) {
		res.badByWave[p.wave]++
		if p.added.After(res.lastBad) {
			res.lastBad = p.added
		}
		if p.wave == "canary" && !p.finished.IsZero() && p.phase != kargo.PromotionSucceeded {
			failures = append(failures, p.finished)
		}
	}
	slices.SortFunc(failures, func(a, b time.Time) int { return a.Compare(b) })
	res.canaryFailed = len(failures)
	if len(failures) > h.shape.canaryMaxFailures {
		res.crossing = failures[h.shape.canaryMaxFailures]
	}
	for _, p := range h.obs.rolloutPromotions(res.bad.name) {
		if !res.crossing.IsZero() && p.added.After(res.crossing) {
			res.afterCrossing++
		}
		if !res.breachSeen.IsZero() && p.added.After(res.breachSeen) {
			res.afterSeen++
		}
	}
	for _, p := range h.obs.rolloutPromotions(res.rollback.name) {
		if res.firstRollback.IsZero() || p.added.Before(res.firstRollback) {
			res.firstRollback = p.added
		}
	}
}
