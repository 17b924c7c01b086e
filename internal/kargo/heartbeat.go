package kargo

import (
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Kargo's controller heartbeat (observed on Kargo v1.11.2): every Kargo
// controller, the default one and each shard's, keeps a Lease in Kargo's
// namespace that it renews every third of its duration and deletes when it
// stops gracefully. Kargo's API server lists these Leases to show which
// controllers are alive.
const (
	// DefaultNamespace is the namespace Kargo is installed in by default
	// (its controllers' KARGO_NAMESPACE), where the heartbeat Leases are.
	DefaultNamespace = "kargo"
	// ControllerLabel labels a heartbeat Lease with the controller's shard
	// (its SHARD_NAME): the empty string for a controller without one.
	ControllerLabel = "kargo.akuity.io/controller"
	// HeartbeatLeasePrefix starts every heartbeat Lease's name; the shard
	// (UnnamedController for none) follows.
	HeartbeatLeasePrefix = "kargo-controller-"
	// UnnamedController stands for the shard in the Lease name of a
	// controller without SHARD_NAME.
	UnnamedController = "unnamed"
	// DefaultHeartbeatTTL is the heartbeat Lease's duration (the
	// controller's HEARTBEAT_TTL_SECONDS, default 120).
	DefaultHeartbeatTTL = 120 * time.Second
	// HeartbeatRenewDivisor says how often a controller renews its Lease:
	// every duration divided by it (40 s by default).
	HeartbeatRenewDivisor = 3
)

// HeartbeatLeaseName names the heartbeat Lease of the controller of a
// shard; "" is a controller without SHARD_NAME.
func HeartbeatLeaseName(shard string) string {
	if shard == "" {
		return HeartbeatLeasePrefix + UnnamedController
	}
	return HeartbeatLeasePrefix + shard
}

// NewHeartbeatLease builds the heartbeat Lease a Kargo controller of shard
// writes: held by holder (its host name), acquired when the controller
// started and renewed at renewed.
func NewHeartbeatLease(namespace, shard, holder string, ttl time.Duration, acquired, renewed time.Time) *coordinationv1.Lease {
	seconds := int32(ttl / time.Second)
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: namespace,
			Name:      HeartbeatLeaseName(shard),
			Labels:    map[string]string{ControllerLabel: shard},
		},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       &holder,
			LeaseDurationSeconds: &seconds,
			AcquireTime:          &metav1.MicroTime{Time: acquired},
			RenewTime:            &metav1.MicroTime{Time: renewed},
		},
	}
}

// HeartbeatShard tells which shard's controller a Lease is the heartbeat
// of, by its label ("" for a controller without SHARD_NAME); ok is false
// for a Lease that is no heartbeat.
func HeartbeatShard(lease *coordinationv1.Lease) (shard string, ok bool) {
	shard, ok = lease.Labels[ControllerLabel]
	return shard, ok
}

// HeartbeatAlive tells whether the controller behind a heartbeat Lease is
// alive at now: it renewed the Lease within the Lease's duration. A Lease
// never renewed, or without a duration, is not alive.
func HeartbeatAlive(lease *coordinationv1.Lease, now time.Time) bool {
	s := &lease.Spec
	if s.RenewTime == nil || s.LeaseDurationSeconds == nil {
		return false
	}
	return !now.After(s.RenewTime.Add(time.Duration(*s.LeaseDurationSeconds) * time.Second))
}
