//go:build integration

package rollout_test

import (
	"context"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/kargosim"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

// TestCrashesNeverPromoteATargetTwice stops the orchestrating controller at
// random moments (seeded; KARGO_FLEET_CRASH_SEED picks another seed) and
// starts a fresh one, over and over, through a good rollout and a breached
// one with its automatic rollback. Whatever the moment of the crash, no
// target gets a second Promotion for the same rollout, no decision is lost,
// and the fleet ends where it must.
func TestCrashesNeverPromoteATargetTwice(t *testing.T) {
	seed := uint64(20261122)
	if s, err := strconv.ParseUint(os.Getenv("KARGO_FLEET_CRASH_SEED"), 10, 64); err == nil {
		seed = s
	}
	t.Logf("crash seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	dumpPromotions(t, "crash")

	f := newFleet(t, "crash", ringFleet(8, 3,
		fleetv1alpha1.RollbackPolicy{Mode: fleetv1alpha1.RollbackAutomatic, MaxConcurrent: testutil.Int(2)}))

	var (
		wg       sync.WaitGroup
		restarts int
	)
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Duration(50+rng.IntN(900)) * time.Millisecond):
			}
			if err := env.StopController(); err != nil {
				t.Errorf("stopping the controller: %v", err)
				return
			}
			time.Sleep(time.Duration(rng.IntN(300)) * time.Millisecond)
			if err := env.StartController(); err != nil {
				t.Errorf("starting the controller: %v", err)
				return
			}
			restarts++
		}
	}()

	t.Cleanup(func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		wg.Wait()
	})
	f.ship(f.good)
	good := f.rollout(f.good, fleetv1alpha1.RolloutSucceeded, fleetv1alpha1.RolloutFailed)
	require.Equal(t, fleetv1alpha1.RolloutSucceeded, good.Status.Phase, good.Status.Message)
	require.Equal(t, f.good, f.lastGood(), "after the good rollout, through crashes")
	f.ship(f.bad)
	bad := f.rollout(f.bad, fleetv1alpha1.RolloutFailed, fleetv1alpha1.RolloutSucceeded)
	require.Equal(t, fleetv1alpha1.RolloutFailed, bad.Status.Phase, bad.Status.Message)
	require.Equal(t, f.good, f.lastGood(), "a breached rollout never becomes the last good one, through crashes")
	rb := f.awaitRollback(f.good)
	select {
	case <-stop:
	default:
		close(stop)
	}
	wg.Wait()
	t.Logf("controller restarted %d times", restarts)
	require.Equal(t, f.good, f.lastGood(), "after the rollback, through crashes")
	require.GreaterOrEqual(t, restarts, 10, "the test must crash the controller many times")
	require.Equal(t, fleetv1alpha1.RolloutSucceeded, rb.Status.Phase, rb.Status.Message)

	promoted := promotionsPerTarget(t, f.ns)
	requireOncePerTarget(t, f.ns)
	require.Len(t, promoted[good.Name], 14, "the good rollout promoted every target once")
	for id := range promoted[bad.Name] {
		require.NotContains(t, id, "general", "the bad Freight never reached the general ring")
	}
	require.Equal(t, slices.Sorted(maps.Keys(promoted[bad.Name])), slices.Sorted(maps.Keys(promoted[rb.Name])),
		"the rollback returned exactly the targets the bad rollout moved")
	require.Equal(t, 1, countRollbacks(t, f.ns), "one rollback, however often the controller died")
	for id, freight := range f.targetFreight() {
		require.Equal(t, f.good, freight, id)
	}
}

// TestStepServerRestartMidWave restarts the step server while a wave's
// fleet-wave step polls it: the wave Promotion survives the refused
// connections (the tasks' error threshold) and the rollout finishes.
func TestStepServerRestartMidWave(t *testing.T) {
	f := newFleet(t, "steps-restart", fleetSpec{
		targets: inline("c", 4, nil, map[string]string{kargosim.DelayVar: "1s"}),
		waves:   []fleetv1alpha1.Wave{{Name: "pilot", Count: testutil.Int(1)}, {Name: "rest", MaxConcurrent: testutil.Int(1)}},
	})
	f.ship(f.good)
	require.Eventually(t, func() bool {
		ro := f.findRollout(f.good, fleetv1alpha1.DirectionForward)
		return ro != nil && len(ro.Status.Waves) == 2 && ro.Status.Waves[1].Phase == fleetv1alpha1.WaveProgressing
	}, wait, tick, "the second wave is running")
	require.NoError(t, env.RestartStepServer())
	ro := f.rollout(f.good, fleetv1alpha1.RolloutSucceeded, fleetv1alpha1.RolloutFailed)
	require.Equal(t, fleetv1alpha1.RolloutSucceeded, ro.Status.Phase, ro.Status.Message)
	for _, wave := range []string{"pilot", "rest"} {
		p := f.latestWavePromotion(wave, f.good)
		require.NotNil(t, p)
		require.Eventually(t, func() bool {
			got := &kargo.Promotion{}
			return env.Client.Get(context.Background(), client.ObjectKeyFromObject(p), got) == nil &&
				got.Status.Phase == kargo.PromotionSucceeded
		}, wait, tick, "wave Stage Promotion of %s succeeds", wave)
	}
}
