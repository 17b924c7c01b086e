package main

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

// hold keeps the controller process running for d after the phases, on the
// Kargo CRDs the environment installed (a stock Kargo v1.11.2 has neither
// Target nor ClusterProfile), checking every 30 s that it has not exited.
// At the end one target joins the fleet: the FleetStage must take it in,
// so the controller is still reconciling, not merely alive.
func (h *harness) hold(ctx context.Context, d time.Duration) (string, error) {
	start := time.Now()
	tick := time.NewTicker(30 * time.Second)
	defer tick.Stop()
	for time.Since(start) < d {
		select {
		case err := <-h.ctrl.done:
			h.ctrl.done <- err
			return "", fmt.Errorf("the controller exited after %s: %w", time.Since(start).Round(time.Second), err)
		case <-ctx.Done():
			return "", ctx.Err()
		case <-tick.C:
			logf("  hold: controller running for %s", time.Since(start).Round(time.Second))
		}
	}
	key := client.ObjectKey{Namespace: h.shape.namespace, Name: fleetName}
	fs := &fleetv1alpha1.FleetStage{}
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := h.c.Get(ctx, key, fs); err != nil {
			return err
		}
		src := &fs.Spec.Targets.Sources[0]
		src.Inline = append(src.Inline, fleetv1alpha1.InlineTarget{Name: "joined-after-hold"})
		return h.c.Update(ctx, fs)
	}); err != nil {
		return "", err
	}
	want := len(fs.Spec.Targets.Sources[0].Inline)
	joined := time.Now()
	for time.Since(joined) < 2*time.Minute {
		if err := h.c.Get(ctx, key, fs); err != nil {
			return "", err
		}
		if int(fs.Status.Targets.Selected) == want && fs.Status.ObservedGeneration == fs.Generation {
			return fmt.Sprintf("the controller ran %s on the environment's Kargo CRDs (no Target, no ClusterProfile CRD) "+
				"and then took a joining target in after %s", d, time.Since(joined).Round(time.Millisecond)), nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return "", fmt.Errorf("after %s the controller did not take a joining target in within 2 minutes", d)
}
