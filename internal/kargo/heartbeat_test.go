package kargo

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestNewHeartbeatLease(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name      string
		shard     string
		wantName  string
		wantLabel string
	}{
		{name: "a shard controller", shard: "eu", wantName: "kargo-controller-eu", wantLabel: "eu"},
		{name: "a controller without SHARD_NAME", shard: "", wantName: "kargo-controller-unnamed", wantLabel: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			l := NewHeartbeatLease(DefaultNamespace, tt.shard, "kargo-controller-7c9d", DefaultHeartbeatTTL, start, start.Add(time.Minute))
			require.Equal(t, DefaultNamespace, l.Namespace)
			require.Equal(t, tt.wantName, l.Name)
			require.Equal(t, map[string]string{ControllerLabel: tt.wantLabel}, l.Labels)
			require.Equal(t, int32(120), *l.Spec.LeaseDurationSeconds)
			require.Equal(t, "kargo-controller-7c9d", *l.Spec.HolderIdentity)
			require.Equal(t, start, l.Spec.AcquireTime.Time)
			require.Equal(t, start.Add(time.Minute), l.Spec.RenewTime.Time)
			shard, ok := HeartbeatShard(l)
			require.True(t, ok)
			require.Equal(t, tt.shard, shard)
		})
	}
	_, ok := HeartbeatShard(&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "kargo-fleet-controller"}})
	require.False(t, ok, "a Lease without the controller label is no heartbeat")
}

func TestHeartbeatAlive(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	lease := func(renewed *time.Time, seconds *int32) *coordinationv1.Lease {
		l := &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{LeaseDurationSeconds: seconds}}
		if renewed != nil {
			l.Spec.RenewTime = &metav1.MicroTime{Time: *renewed}
		}
		return l
	}
	at := func(d time.Duration) *time.Time { t := now.Add(d); return &t }
	ttl := int32(120)
	tests := []struct {
		name  string
		lease *coordinationv1.Lease
		want  bool
	}{
		{name: "renewed a moment ago", lease: lease(at(-time.Second), &ttl), want: true},
		{name: "renewed exactly one duration ago", lease: lease(at(-120*time.Second), &ttl), want: true},
		{name: "renewed longer ago than its duration", lease: lease(at(-121*time.Second), &ttl), want: false},
		{name: "never renewed", lease: lease(nil, &ttl), want: false},
		{name: "no duration", lease: lease(at(-time.Second), nil), want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, HeartbeatAlive(tt.lease, now))
		})
	}
}
