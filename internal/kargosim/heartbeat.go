package kargosim

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// heartbeatDeleteTimeout bounds the Lease delete on stop: the manager's
// context is already done then, and the API server may be going away too.
const heartbeatDeleteTimeout = 5 * time.Second

// heartbeat keeps one simulated controller's heartbeat Lease, as every
// Kargo controller does: written when the controller starts, renewed every
// third of its duration, deleted when the controller stops gracefully.
type heartbeat struct {
	sim    *Simulator
	sc     *shardController
	holder string
}

// setupHeartbeats adds a heartbeat per simulated controller to the manager.
// All of them hold the Leases under this process's host name, as Kargo's
// controllers do under their pod's.
func (s *Simulator) setupHeartbeats(mgr ctrl.Manager) error {
	holder, err := os.Hostname()
	if err != nil || holder == "" {
		holder = LoggerName
	}
	for _, shard := range s.controllerShards() {
		if err := mgr.Add(&heartbeat{sim: s, sc: s.shards[shard], holder: holder}); err != nil {
			return err
		}
	}
	return nil
}

// Start writes and renews the Lease until the manager stops or StopShard
// stops the shard, then deletes it. A failed write is logged and tried again
// at the next renewal: the controller keeps running, and its Lease shows it
// as dead, as Kargo's would when it cannot reach the API server.
func (h *heartbeat) Start(ctx context.Context) error {
	defer close(h.sc.done)
	log := logger(ctx).WithValues("shard", h.sc.shard, "namespace", h.sim.opts.KargoNamespace,
		"Lease", kargo.HeartbeatLeaseName(h.sc.shard))
	clk := h.sim.opts.Clock
	acquired := clk.Now()
	if err := h.ensureNamespace(ctx); err != nil {
		log.Error(err, "Error creating Kargo's namespace for the heartbeat Lease")
	}
	if err := h.write(ctx, acquired, acquired); err != nil {
		log.Error(err, "Error writing the heartbeat Lease")
	}
	ticker := clk.NewTicker(h.sim.opts.HeartbeatTTL / kargo.HeartbeatRenewDivisor)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			h.delete(log)
			return nil
		case <-h.sc.stop:
			h.delete(log)
			return nil
		case <-ticker.C():
			if err := h.write(ctx, acquired, clk.Now()); err != nil {
				log.Error(err, "Error renewing the heartbeat Lease")
			}
		}
	}
}

// ensureNamespace creates Kargo's namespace when it does not exist: the
// simulator stands in for a Kargo installation, which has it.
func (h *heartbeat) ensureNamespace(ctx context.Context) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: h.sim.opts.KargoNamespace}}
	err := h.sim.reader.Get(ctx, client.ObjectKeyFromObject(ns), ns)
	if !apierrors.IsNotFound(err) {
		return err
	}
	if err := h.sim.client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// write creates the Lease or updates it to say the controller, started at
// acquired, is alive at renewed. Leases are read from the API server, not
// the cache: the simulator watches no Lease.
func (h *heartbeat) write(ctx context.Context, acquired, renewed time.Time) error {
	want := kargo.NewHeartbeatLease(h.sim.opts.KargoNamespace, h.sc.shard, h.holder, h.sim.opts.HeartbeatTTL, acquired, renewed)
	got := &coordinationv1.Lease{}
	err := h.sim.reader.Get(ctx, client.ObjectKeyFromObject(want), got)
	switch {
	case apierrors.IsNotFound(err):
		if err := h.sim.client.Create(ctx, want); err != nil {
			return fmt.Errorf("error creating Lease %q in namespace %q: %w", want.Name, want.Namespace, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("error getting Lease %q in namespace %q: %w", want.Name, want.Namespace, err)
	}
	got.Labels, got.Spec = want.Labels, want.Spec
	if err := h.sim.client.Update(ctx, got); err != nil {
		return fmt.Errorf("error updating Lease %q in namespace %q: %w", want.Name, want.Namespace, err)
	}
	return nil
}

// delete removes the Lease, as Kargo's controller does on SIGTERM.
func (h *heartbeat) delete(log logr.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), heartbeatDeleteTimeout)
	defer cancel()
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{
		Namespace: h.sim.opts.KargoNamespace, Name: kargo.HeartbeatLeaseName(h.sc.shard)}}
	if err := h.sim.client.Delete(ctx, lease); client.IgnoreNotFound(err) != nil {
		log.Error(err, "Error deleting the heartbeat Lease")
	}
}
