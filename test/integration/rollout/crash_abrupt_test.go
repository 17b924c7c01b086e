//go:build integration

package rollout_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/kargosim"
	"github.com/kargo-fleet/kargo-fleet/internal/manager"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

// errKilled is what a killed process's client "returns": nothing reaches
// the process any more, whether or not the apiserver applied the write.
var errKilled = errors.New("the process was killed")

// killSwitch cuts a controller's client off the way kill -9 does. When the
// create of target Promotion number at (counted from 1) begins, the switch
// trips: that create and every create already in flight still reach the
// apiserver, but their answers are lost; every later write of the process
// fails without reaching it (no deferred status patch, no cleanup).
type killSwitch struct {
	at      int32
	creates atomic.Int32
	tripped atomic.Bool
	killed  chan struct{}
	once    sync.Once
}

func newKillSwitch(at int) *killSwitch {
	return &killSwitch{at: int32(at), killed: make(chan struct{})}
}

func (k *killSwitch) trip() {
	k.tripped.Store(true)
	k.once.Do(func() { close(k.killed) })
}

// wrap installs the switch on the manager's client.
func (k *killSwitch) wrap(o *manager.Options) {
	o.NewClient = func(cfg *rest.Config, opts client.Options) (client.Client, error) {
		c, err := client.NewWithWatch(cfg, opts)
		if err != nil {
			return nil, err
		}
		dead := func() error {
			if k.tripped.Load() {
				return errKilled
			}
			return nil
		}
		return interceptor.NewClient(c, interceptor.Funcs{
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				if err := dead(); err != nil {
					return err
				}
				if obj.GetLabels()[fleetv1alpha1.TargetLabel] != "" && k.creates.Add(1) == k.at {
					k.trip()
				}
				err := c.Create(ctx, obj, opts...)
				if k.tripped.Load() {
					return errKilled // applied or not, the answer is lost
				}
				return err
			},
			Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
				if err := dead(); err != nil {
					return err
				}
				return c.Update(ctx, obj, opts...)
			},
			Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
				if err := dead(); err != nil {
					return err
				}
				return c.Patch(ctx, obj, p, opts...)
			},
			Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
				if err := dead(); err != nil {
					return err
				}
				return c.Delete(ctx, obj, opts...)
			},
			SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
				if err := dead(); err != nil {
					return err
				}
				return c.SubResource(sub).Update(ctx, obj, opts...)
			},
			SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
				if err := dead(); err != nil {
					return err
				}
				return c.SubResource(sub).Patch(ctx, obj, p, opts...)
			},
		}), nil
	}
}

// ringSelector selects the inline targets labelled ring=r.
func ringSelector(r string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{"ring": r}}
}

// ringFleet is a fleet in three rings: pilot (2 targets), canary (4, which
// fail Freight f2-bad; maxFailures 1, maxConcurrent 2) and general
// (general targets, generalMaxConcurrent at once). Every step takes 300 ms.
func ringFleet(general, generalMaxConcurrent int, rollback fleetv1alpha1.RollbackPolicy) fleetSpec {
	step := map[string]string{kargosim.DelayVar: "300ms"}
	breaks := map[string]string{kargosim.DelayVar: "300ms", kargosim.FaultVar: kargosim.FaultFail, kargosim.FaultFreightVar: "f2-bad"}
	targets := append(inline("pilot", 2, map[string]string{"ring": "pilot"}, step),
		inline("canary", 4, map[string]string{"ring": "canary"}, breaks)...)
	targets = append(targets, inline("general", general, map[string]string{"ring": "general"}, step)...)
	return fleetSpec{
		targets: targets,
		waves: []fleetv1alpha1.Wave{
			{Name: "pilot", Selector: ringSelector("pilot")},
			{Name: "canary", Selector: ringSelector("canary"), MaxFailures: testutil.Int(1), MaxConcurrent: testutil.Int(2)},
			{Name: "general", Selector: ringSelector("general"), MaxConcurrent: testutil.Int(generalMaxConcurrent)},
		},
		policy:      fleetv1alpha1.FleetPolicy{Rollback: rollback},
		autoPromote: true,
	}
}

// promotionsPerTarget counts the target Promotions of each rollout of the
// namespace, by rollout and target ID.
func promotionsPerTarget(t *testing.T, ns string) map[string]map[string]int {
	t.Helper()
	list := &kargo.PromotionList{}
	require.NoError(t, env.Client.List(context.Background(), list, client.InNamespace(ns)))
	out := map[string]map[string]int{}
	for _, p := range list.Items {
		r, id := p.Labels[fleetv1alpha1.RolloutLabel], p.Labels[fleetv1alpha1.TargetLabel]
		if r == "" || id == "" {
			continue
		}
		if out[r] == nil {
			out[r] = map[string]int{}
		}
		out[r][id]++
	}
	return out
}

// countRollbacks counts the rollback FleetRollouts of the namespace.
func countRollbacks(t *testing.T, ns string) int {
	t.Helper()
	rollouts := &fleetv1alpha1.FleetRolloutList{}
	require.NoError(t, env.Client.List(context.Background(), rollouts, client.InNamespace(ns)))
	n := 0
	for _, ro := range rollouts.Items {
		if ro.Spec.Direction == fleetv1alpha1.DirectionRollback {
			n++
		}
	}
	return n
}

// requireOncePerTarget fails when a (rollout, target) has more than one
// Promotion, and returns how many targets each rollout promoted.
func requireOncePerTarget(t *testing.T, ns string) map[string]int {
	t.Helper()
	targets := map[string]int{}
	for ro, perTarget := range promotionsPerTarget(t, ns) {
		for id, n := range perTarget {
			require.Equal(t, 1, n, "rollout %s promoted target %s %d times", ro, id, n)
		}
		targets[ro] = len(perTarget)
	}
	return targets
}

// TestAbruptKillDuringCreateBatch kills the orchestrating controller, with
// no graceful stop, while it creates a batch of target Promotions: some of
// the batch reach the apiserver, none of their answers come back, and the
// dead process writes nothing more. Each fresh controller finds what the
// dead one did from the API server alone: no target is promoted twice and
// the rollout succeeds.
func TestAbruptKillDuringCreateBatch(t *testing.T) {
	rng := rand.New(rand.NewPCG(20261124, 1))
	dumpPromotions(t, "abrupt-kill")
	step := map[string]string{kargosim.DelayVar: "200ms"}
	f := newFleet(t, "abrupt-kill", fleetSpec{
		targets: inline("t", 24, nil, step),
		waves: []fleetv1alpha1.Wave{
			{Name: "pilot", Count: testutil.Int(2)},
			{Name: "rest", MaxConcurrent: testutil.Int(12)},
		},
		autoPromote: true,
	})
	t.Cleanup(func() {
		_ = env.StopController()
		require.NoError(t, env.StartController(), "the next test needs a controller")
	})

	// Replace the controller with one that dies at the 1st to 6th create
	// of its life, five times over, then leave a healthy one running.
	kill := func() *killSwitch {
		require.NoError(t, env.StopController())
		k := newKillSwitch(1 + rng.IntN(6))
		require.NoError(t, env.StartControllerWith(k.wrap))
		return k
	}
	k := kill()
	f.ship(f.good)
	kills := 0
	for kills < 5 {
		select {
		case <-k.killed:
			kills++
			k = kill()
		case <-time.After(wait):
			require.FailNow(t, "no create batch in flight to kill", "after %d kills", kills)
		}
	}
	require.NoError(t, env.StopController())
	require.NoError(t, env.StartController())

	ro := f.rollout(f.good, fleetv1alpha1.RolloutSucceeded, fleetv1alpha1.RolloutFailed)
	require.Equal(t, fleetv1alpha1.RolloutSucceeded, ro.Status.Phase, ro.Status.Message)
	promoted := requireOncePerTarget(t, f.ns)
	require.Equal(t, 24, promoted[ro.Name], "every target promoted, once")
	for id, freight := range f.targetFreight() {
		require.Equal(t, f.good, freight, id)
	}
	require.Equal(t, f.good, f.lastGood())
}

// TestOverlappingLeaders runs a second orchestrating controller beside the
// first for a Lease period (15 s, controller-runtime's default), as when a
// leader that lost its Lease has not noticed yet: both reconcile the same
// rollouts through a good rollout and a breached one with its automatic
// rollback. No target is promoted twice for one rollout and there is one
// rollback.
func TestOverlappingLeaders(t *testing.T) {
	dumpPromotions(t, "two-leaders")
	f := newFleet(t, "two-leaders", ringFleet(10, 5, fleetv1alpha1.RollbackPolicy{Mode: fleetv1alpha1.RollbackAutomatic}))

	overlap := func(run func()) {
		stopRival, err := env.StartRivalController()
		require.NoError(t, err)
		started := time.Now()
		run()
		if rest := 15*time.Second - time.Since(started); rest > 0 {
			time.Sleep(rest)
		}
		require.NoError(t, stopRival())
	}

	overlap(func() {
		f.ship(f.good)
		ro := f.rollout(f.good, fleetv1alpha1.RolloutSucceeded, fleetv1alpha1.RolloutFailed)
		require.Equal(t, fleetv1alpha1.RolloutSucceeded, ro.Status.Phase, ro.Status.Message)
	})
	require.Equal(t, f.good, f.lastGood())
	var bad, rb *fleetv1alpha1.FleetRollout
	overlap(func() {
		f.ship(f.bad)
		bad = f.rollout(f.bad, fleetv1alpha1.RolloutFailed, fleetv1alpha1.RolloutSucceeded)
		require.Equal(t, fleetv1alpha1.RolloutFailed, bad.Status.Phase, bad.Status.Message)
		rb = f.awaitRollback(f.good)
	})
	require.Equal(t, fleetv1alpha1.RolloutSucceeded, rb.Status.Phase, rb.Status.Message)
	require.Equal(t, f.good, f.lastGood())

	promoted := promotionsPerTarget(t, f.ns)
	requireOncePerTarget(t, f.ns)
	require.Equal(t, 1, countRollbacks(t, f.ns), "one rollback, whichever controller asked")
	// The rollback returns what the bad rollout moved. A batch the other
	// controller claimed in the very moment of the halt can land after the
	// rollback's plan was frozen: such a target stays on the bad Freight,
	// and the FleetStage reports it as drift (docs/rollouts.md).
	for id := range promoted[rb.Name] {
		require.Contains(t, promoted[bad.Name], id, "the rollback moved only targets the bad rollout moved")
	}
	var onBad []string
	for id, freight := range f.targetFreight() {
		if freight != f.good {
			onBad = append(onBad, id)
			require.Equal(t, f.bad, freight, id)
			require.Contains(t, promoted[bad.Name], id)
			require.NotContains(t, promoted[rb.Name], id,
				"a target left on the bad Freight is one the bad rollout moved after the rollback's plan froze")
		}
	}
	if len(onBad) > 0 {
		t.Logf("%d target(s) moved by the overlapping controller after the rollback's plan froze: %v", len(onBad), onBad)
		require.Eventually(t, func() bool {
			fs := &fleetv1alpha1.FleetStage{}
			return env.Client.Get(context.Background(), f.fleetKey, fs) == nil && fs.Status.Drift != nil &&
				int(fs.Status.Drift.Count) == len(onBad)
		}, wait, tick, "the targets left on the bad Freight are reported as drift")
	}
}
