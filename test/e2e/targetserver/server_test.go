package targetserver_test

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kargo-fleet/kargo-fleet/test/e2e/targetserver"
)

func TestServerAnswersByRuleAndLogsEveryCall(t *testing.T) {
	srv := &targetserver.Server{}
	url, stop, err := srv.Start("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = stop() })
	c := &targetserver.Client{URL: url}
	ctx := context.Background()
	require.NoError(t, c.SetRules(ctx, []targetserver.Rule{
		{Target: "a", Freight: "bad", Outcome: targetserver.Fail},
		{Target: "slow", Delay: "300ms"},
		{Freight: "bad", Outcome: targetserver.Succeed},
	}))

	cases := []struct {
		target, freight string
		wantBody        string
		minTime         time.Duration
	}{
		{"a", "bad", `"state":"failed"`, 0},
		{"a", "good", `"state":"done"`, 0},
		{"b", "bad", `"state":"done"`, 0},
		{"slow", "good", `"state":"done"`, 300 * time.Millisecond},
	}
	for _, tc := range cases {
		start := time.Now()
		resp, err := http.Get(url + "/promote?target=" + tc.target + "&freight=" + tc.freight)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Contains(t, string(body), tc.wantBody, "%s/%s", tc.target, tc.freight)
		require.GreaterOrEqual(t, time.Since(start), tc.minTime, "%s/%s", tc.target, tc.freight)
	}

	calls, err := c.Calls(ctx)
	require.NoError(t, err)
	require.Len(t, calls, len(cases))
	for i, tc := range cases {
		require.Equal(t, tc.target, calls[i].Target)
		require.Equal(t, tc.freight, calls[i].Freight)
	}
	require.Equal(t, targetserver.Fail, calls[0].Outcome)

	resp, err := http.Get(url + "/promote?target=a")
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, "a call without a Freight is refused")
}

func TestServerRefusesInvalidRules(t *testing.T) {
	srv := &targetserver.Server{}
	require.Error(t, srv.SetRules([]targetserver.Rule{{Outcome: "maybe"}}))
	require.Error(t, srv.SetRules([]targetserver.Rule{{Delay: "soon"}}))
	require.NoError(t, srv.SetRules([]targetserver.Rule{{Outcome: targetserver.Fail, Delay: "1s"}}))
}
