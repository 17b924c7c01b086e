package doctor

import (
	"cmp"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

func TestShardVerdict(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	old, recent := now.Add(-10*time.Minute), now.Add(-10*time.Second)
	stage := func(name, shard string, created time.Time, reconciled bool) kargo.Stage {
		st := kargo.Stage{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(created),
			Labels: map[string]string{fleetv1alpha1.RoleLabel: fleetv1alpha1.RoleTarget}}}
		if shard != "" {
			st.Labels[kargo.ShardLabel] = shard
		}
		if reconciled {
			st.Status.ObservedGeneration = 1
		}
		return st
	}
	promo := func(name, shard string, created time.Time, phase kargo.PromotionPhase) kargo.Promotion {
		p := kargo.Promotion{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(created)}}
		if shard != "" {
			p.Labels = map[string]string{kargo.ShardLabel: shard}
		}
		p.Status.Phase = phase
		return p
	}
	noBeats := Heartbeats{Namespace: "kargo", ByShard: map[string]ShardHeartbeat{}}
	alive := ShardHeartbeat{Alive: true, Renewed: now.Add(-10 * time.Second), Duration: 2 * time.Minute}
	beats := func(byShard map[string]ShardHeartbeat) Heartbeats {
		return Heartbeats{Namespace: "kargo", ByShard: byShard}
	}
	tests := []struct {
		name        string
		stages      []kargo.Stage
		promotions  []kargo.Promotion
		heartbeats  *Heartbeats
		wantStatus  Status
		wantMessage string
		wantFix     string
	}{
		{
			name:        "every shard reconciled",
			stages:      []kargo.Stage{stage("w", "", old, true), stage("a", "eu", old, true), stage("b", "us", old, true)},
			promotions:  []kargo.Promotion{promo("p1", "eu", old, kargo.PromotionSucceeded)},
			wantStatus:  StatusOK,
			wantMessage: "(default) (1 Stages), eu (1 Stages), us (1 Stages)",
		},
		{
			name:        "a shard whose Stages never got a status",
			stages:      []kargo.Stage{stage("w", "", old, true), stage("a", "eu", old, true), stage("b", "us", old, false), stage("c", "us", old, false)},
			wantStatus:  StatusFail,
			wantMessage: "no Kargo controller reconciles shard(s) us: 2 Stages without a status, 0 Promotions never picked up for over 2m0s (Stage b, Stage c)",
		},
		{
			name:        "a shard whose Promotions stay without a phase",
			stages:      []kargo.Stage{stage("a", "eu", recent, false)},
			promotions:  []kargo.Promotion{promo("p1", "eu", old, ""), promo("p2", "eu", old, "")},
			wantStatus:  StatusFail,
			wantMessage: "eu: 0 Stages without a status, 2 Promotions never picked up",
		},
		{
			name:        "Stages moved to a shard keep their status; their waiting Promotions tell",
			stages:      []kargo.Stage{stage("a", "gone", old, true)},
			promotions:  []kargo.Promotion{promo("p1", "gone", old, "")},
			wantStatus:  StatusFail,
			wantMessage: "gone: 0 Stages without a status, 1 Promotions never picked up",
		},
		{
			name:       "new Stages are given time",
			stages:     []kargo.Stage{stage("a", "eu", recent, false)},
			promotions: []kargo.Promotion{promo("p1", "eu", recent, "")},
			wantStatus: StatusOK,
		},
		{
			name:        "some reconciled, some overdue: the controller lags",
			stages:      []kargo.Stage{stage("a", "eu", old, true), stage("b", "eu", old, false)},
			wantStatus:  StatusWarn,
			wantMessage: "eu: 1 of 2 Stages without a status",
		},
		{
			name:        "no Stage yet",
			wantStatus:  StatusOK,
			wantMessage: "shards not checked",
		},
		{
			name:        "no heartbeat Lease at all: judged by statuses, and said so",
			stages:      []kargo.Stage{stage("a", "eu", old, true)},
			wantStatus:  StatusOK,
			wantMessage: "eu (1 Stages) (no Kargo controller heartbeat Lease in namespace kargo, as with a Kargo older",
		},
		{
			name:        "Leases not readable: judged by statuses, and said why",
			stages:      []kargo.Stage{stage("a", "eu", old, false)},
			heartbeats:  &Heartbeats{Namespace: "kargo", ReadErr: errors.New(`leases is forbidden`)},
			wantStatus:  StatusFail,
			wantMessage: "could not be listed: leases is forbidden; judged by Stage statuses and Promotion phases instead",
		},
		{
			name:        "a live heartbeat for every shard",
			stages:      []kargo.Stage{stage("w", "", old, true), stage("a", "eu", recent, false)},
			heartbeats:  ptr.To(beats(map[string]ShardHeartbeat{"": alive, "eu": alive})),
			wantStatus:  StatusOK,
			wantMessage: "(default) (1 Stages), eu (1 Stages) (judged by the Kargo controllers' heartbeat Leases in namespace kargo)",
		},
		{
			name:        "a shard without a heartbeat Lease fails at once, its Stages new or not",
			stages:      []kargo.Stage{stage("w", "", recent, false), stage("a", "us", recent, false), stage("b", "us", recent, false)},
			heartbeats:  ptr.To(beats(map[string]ShardHeartbeat{"": alive})),
			wantStatus:  StatusFail,
			wantMessage: "no Kargo controller reconciles shard(s) us: 2 target Stages, no heartbeat Lease kargo/kargo-controller-us",
			wantFix:     "SHARD_NAME=us (kubectl get lease -n kargo kargo-controller-us)",
		},
		{
			name:   "a shard whose heartbeat expired though its Stages have a status",
			stages: []kargo.Stage{stage("a", "eu", old, true)},
			heartbeats: ptr.To(beats(map[string]ShardHeartbeat{
				"eu": {Renewed: now.Add(-5 * time.Minute), Duration: 2 * time.Minute}, "": alive})),
			wantStatus:  StatusFail,
			wantMessage: "eu: 1 target Stages, heartbeat Lease kargo/kargo-controller-eu last renewed 5m0s ago, more than its 2m0s duration",
			wantFix:     "SHARD_NAME=eu (kubectl get lease -n kargo kargo-controller-eu)",
		},
		{
			name:        "a live heartbeat but nothing reconciled: the controller lags",
			stages:      []kargo.Stage{stage("a", "eu", old, false)},
			heartbeats:  ptr.To(beats(map[string]ShardHeartbeat{"eu": alive})),
			wantStatus:  StatusWarn,
			wantMessage: "eu: its heartbeat is live, but 1 of 1 Stages are without a status",
		},
		{
			name:        "the default shard without a live unnamed Lease is judged by statuses",
			stages:      []kargo.Stage{stage("w", "", old, true), stage("a", "eu", old, true)},
			heartbeats:  ptr.To(beats(map[string]ShardHeartbeat{"eu": alive})),
			wantStatus:  StatusOK,
			wantMessage: "the default shard, without a live kargo-controller-unnamed Lease, by Stage statuses and Promotion phases",
		},
		{
			name:        "the default shard without a live unnamed Lease and never reconciled",
			stages:      []kargo.Stage{stage("w", "", old, false), stage("a", "eu", old, true)},
			heartbeats:  ptr.To(beats(map[string]ShardHeartbeat{"eu": alive, "": {Renewed: old, Duration: time.Minute}})),
			wantStatus:  StatusFail,
			wantMessage: "no Kargo controller reconciles shard(s) (default): 1 Stages without a status",
			wantFix:     "SHARD_NAME=<shard>",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			hb := noBeats
			if tt.heartbeats != nil {
				hb = *tt.heartbeats
			}
			status, msg, fix := ShardVerdict(ShardStates(tt.stages, tt.promotions, now, DefaultShardPickupTimeout), hb, now, DefaultShardPickupTimeout)
			require.Equal(t, tt.wantStatus, status, msg)
			require.Contains(t, msg, tt.wantMessage)
			if status == StatusFail {
				require.Contains(t, fix, cmp.Or(tt.wantFix, "SHARD_NAME=<shard>"))
			}
		})
	}
}

func TestReadHeartbeats(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	lease := func(shard string, renewed time.Time) coordinationv1.Lease {
		return *kargo.NewHeartbeatLease("kargo", shard, "host", kargo.DefaultHeartbeatTTL, renewed, renewed)
	}
	stale := lease("eu", now.Add(-10*time.Minute))
	stale.Name = "kargo-controller-eu-old"
	other := coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "kargo-fleet-controller"}}
	hb := ReadHeartbeats("kargo", []coordinationv1.Lease{
		lease("", now.Add(-30*time.Second)), stale, lease("eu", now.Add(-time.Second)),
		lease("us", now.Add(-3*time.Minute)), other,
	}, now)
	require.Equal(t, "kargo", hb.Namespace)
	require.Equal(t, map[string]ShardHeartbeat{
		"":   {Alive: true, Renewed: now.Add(-30 * time.Second), Duration: 2 * time.Minute},
		"eu": {Alive: true, Renewed: now.Add(-time.Second), Duration: 2 * time.Minute},
		"us": {Renewed: now.Add(-3 * time.Minute), Duration: 2 * time.Minute},
	}, hb.ByShard, "the unlabelled Lease is ignored; one live Lease of a shard is enough")
	require.Empty(t, ReadHeartbeats("kargo", nil, now).ByShard)
}

func TestFreightCeilingVerdict(t *testing.T) {
	t.Parallel()
	names := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("fleet.t-%05d", i)
		}
		return out
	}
	status, msg := FreightCeilingVerdict("shop", names(1000))
	require.Equal(t, StatusOK, status, msg)
	require.Contains(t, msg, "a Freight in all 1000 Stages of Project shop would carry about 133 KiB of status, 8%")
	require.Contains(t, msg, fmt.Sprintf("about %d Stages", kargo.MaxStagesPerFreight(13)))
	status, msg = FreightCeilingVerdict("shop", names(10000))
	require.Equal(t, StatusWarn, status, msg)
	require.Contains(t, msg, "Kargo cannot record where a Freight is")
}
