//go:build integration

package privilege_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/kargo-fleet/kargo-fleet/internal/manager"
)

// TestLeaderHandsOverItsLeaseOnStop: two controller replicas elect a
// leader under the chart's RBAC (its leader-election Role); when the
// leader stops gracefully, as on SIGTERM during a rolling update, it
// releases the Lease and the other replica leads at once, not after the
// Lease's 15 seconds.
func TestLeaderHandsOverItsLeaseOnStop(t *testing.T) {
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: own.user}
	start := func() (ctrl.Manager, context.CancelFunc, chan error) {
		t.Helper()
		mgr, err := manager.New(cfg, manager.Options{LeaderElection: true, LeaderElectionNamespace: releaseNamespace,
			HealthProbeBindAddress: "0", MetricsBindAddress: "0", SkipNameValidation: true})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- mgr.Start(ctx) }()
		return mgr, cancel, done
	}
	first, stopFirst, firstDone := start()
	select {
	case <-first.Elected():
	case <-time.After(30 * time.Second):
		t.Fatal("the first replica was never elected")
	}
	second, stopSecond, secondDone := start()
	defer func() {
		stopSecond()
		require.NoError(t, <-secondDone)
	}()
	select {
	case <-second.Elected():
		t.Fatal("two leaders at once")
	case <-time.After(2 * time.Second):
	}
	stopped := time.Now()
	stopFirst()
	require.NoError(t, <-firstDone)
	select {
	case <-second.Elected():
		took := time.Since(stopped)
		t.Logf("report: the second replica led %s after the leader stopped", took.Round(10*time.Millisecond))
		// A Lease that is not released lasts 15 s; the other replica
		// retries every 2 s.
		require.Less(t, took, 10*time.Second, "the Lease was not handed over")
	case <-time.After(30 * time.Second):
		t.Fatal("the second replica was never elected")
	}
}
