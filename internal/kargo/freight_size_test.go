package kargo

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The estimate must not fall short of the status Kargo writes, or the
// warning it feeds comes too late.
func TestFreightStatusBytesCoversTheWrittenStatus(t *testing.T) {
	t.Parallel()
	at := metav1.NewTime(time.Date(2026, 11, 22, 6, 35, 1, 0, time.UTC))
	for _, n := range []int{1, 10, 1000} {
		for _, prefix := range []string{"f.c", "prod-web.us-east-1-cluster-"} {
			t.Run(fmt.Sprintf("%d stages %s", n, prefix), func(t *testing.T) {
				t.Parallel()
				st := FreightStatus{VerifiedIn: map[string]VerifiedStage{}, CurrentlyIn: map[string]CurrentStage{}}
				var names []string
				for i := range n {
					name := fmt.Sprintf("%s%05d", prefix, i)
					names = append(names, name)
					st.CurrentlyIn[name] = CurrentStage{Since: &at}
					st.VerifiedIn[name] = VerifiedStage{VerifiedAt: &at, LongestSoak: &metav1.Duration{Duration: 26*time.Hour + 3*time.Minute + 4567*time.Millisecond}}
				}
				raw, err := json.Marshal(st)
				require.NoError(t, err)
				est := FreightStatusBytes(names)
				require.GreaterOrEqual(t, est, len(raw))
				require.LessOrEqual(t, est, len(raw)*5/4+100, "the estimate stays close")
			})
		}
	}
}

// The ceiling is the last Stage count whose estimated status fits the limit.
func TestMaxStagesPerFreight(t *testing.T) {
	t.Parallel()
	for _, nameLen := range []int{13, 30, 63} {
		n := MaxStagesPerFreight(nameLen)
		names := make([]string, n+1)
		for i := range names {
			names[i] = fmt.Sprintf("%0*d", nameLen, i)
		}
		require.LessOrEqual(t, FreightStatusBytes(names[:n]), FreightObjectLimitBytes, "name length %d", nameLen)
		require.Greater(t, FreightStatusBytes(names), FreightObjectLimitBytes, "name length %d", nameLen)
	}
	// Stage names like "fleet.t-00042" (13 characters): the measured 10,000
	// Stages (1,006 KiB) are below the estimated ceiling.
	require.Greater(t, MaxStagesPerFreight(13), 10000)
}
