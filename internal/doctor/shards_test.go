package doctor

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

func TestShardVerdict(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	old, recent := now.Add(-10*time.Minute), now.Add(-10*time.Second)
	stage := func(name, shard string, created time.Time, reconciled bool) kargo.Stage {
		st := kargo.Stage{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(created)}}
		if shard != "" {
			st.Labels = map[string]string{kargo.ShardLabel: shard}
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
	tests := []struct {
		name        string
		stages      []kargo.Stage
		promotions  []kargo.Promotion
		wantStatus  Status
		wantMessage string
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
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			status, msg, fix := ShardVerdict(ShardStates(tt.stages, tt.promotions, now, DefaultShardPickupTimeout), DefaultShardPickupTimeout)
			require.Equal(t, tt.wantStatus, status, msg)
			require.Contains(t, msg, tt.wantMessage)
			if status == StatusFail {
				require.Contains(t, fix, "SHARD_NAME=<shard>")
			}
		})
	}
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
