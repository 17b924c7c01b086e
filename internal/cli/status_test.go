package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/report"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

func TestStatusCommand(t *testing.T) {
	t.Parallel()
	halted := rollout("prod-bad", fleetv1alpha1.DirectionForward, badFreight, fleetv1alpha1.RolloutHalted,
		fleetv1alpha1.IntentRun, time.Minute)
	halted.Status.Waves = []fleetv1alpha1.WaveProgress{
		{Name: "pilot", Phase: fleetv1alpha1.WaveSucceeded, Total: 2, Succeeded: 2},
		{Name: "canary", Phase: fleetv1alpha1.WaveHalted, Total: 20, Succeeded: 8, Failed: 10, InFlight: 2},
	}
	halted.Status.Failures = []fleetv1alpha1.FailureGroup{{Reason: "PromotionFailed", Count: 10,
		Examples: []fleetv1alpha1.TargetSample{{Name: "eu-west-1-003", Reason: "simulated failure"}}}}
	rb := rollout("prod-bad-rb", fleetv1alpha1.DirectionRollback, goodFreight, fleetv1alpha1.RolloutRollingBack,
		fleetv1alpha1.IntentRun, 2*time.Minute)
	old := rollout("prod-good", fleetv1alpha1.DirectionForward, goodFreight, fleetv1alpha1.RolloutSucceeded,
		fleetv1alpha1.IntentRun, 0)
	older := rollout("prod-older", fleetv1alpha1.DirectionForward, goodFreight, fleetv1alpha1.RolloutSucceeded,
		fleetv1alpha1.IntentRun, -time.Hour)
	other := testutil.MakeFleetStage("shop", "staging").Obj()
	objs := []client.Object{fleetStage("prod-bad-rb", "prod-good", goodFreight), halted, rb, old, older,
		freight(goodFreight, "v1.4.0"), freight(badFreight, "v1.5.0")}

	tests := []struct {
		name       string
		objs       []client.Object
		args       []string
		assertions func(t *testing.T, out string, err error)
	}{
		{
			name: "text: the fleet, the rollback, the rollout it rolls back and the last one",
			objs: objs,
			args: []string{"prod", "-n", "shop"},
			assertions: func(t *testing.T, out string, err error) {
				require.NoError(t, err)
				require.Contains(t, out, "FleetStage shop/prod: Ready, 200 targets in 4 waves, last good Freight v1.4.0 (1a2b3c4)")
				require.Contains(t, out, "v1.5.0 (9f8e7d6) [██····························]  10    5%")
				require.Contains(t, out, "FleetRollout prod-bad-rb (current): Rollback to v1.4.0 (1a2b3c4), RollingBack, running for 59s")
				require.Contains(t, out, "FleetRollout prod-bad (rolled back): Forward to v1.5.0 (9f8e7d6), Halted")
				require.Contains(t, out, "  canary [████████████✗✗✗✗✗✗✗✗✗✗✗✗✗✗✗▒▒▒]  8/20 Halted     10 failed, 2 in flight")
				require.Contains(t, out, "PromotionFailed 10  eu-west-1-003: simulated failure")
				require.Contains(t, out, "FleetRollout prod-good (last): Forward to v1.4.0 (1a2b3c4), Succeeded, started 2m59s ago")
				require.NotContains(t, out, "prod-older", "finished rollouts other than the last are left out")
				require.NotContains(t, out, "Next:", "a rollback under way needs no command")
				require.NotContains(t, out, "\x1b[", "no colour when not on a terminal")
			},
		},
		{
			name: "an aborted rollback: the command that returns every target",
			objs: []client.Object{fleetStage("", "prod-bad-rb", goodFreight), halted,
				rollout("prod-bad-rb", fleetv1alpha1.DirectionRollback, goodFreight, fleetv1alpha1.RolloutAborted,
					fleetv1alpha1.IntentAbort, 2*time.Minute), old, freight(goodFreight, "v1.4.0"), freight(badFreight, "v1.5.0")},
			args: []string{"prod", "-n", "shop"},
			assertions: func(t *testing.T, out string, err error) {
				require.NoError(t, err)
				require.Contains(t, out, "\nNext: rollback prod-bad-rb ended Aborted before every target of prod-bad was back\n"+
					"  To return every target to the last good Freight v1.4.0 (1a2b3c4):\n    kargo-fleet rollback prod -n shop\n")
			},
		},
		{
			name: "--all shows every rollout",
			objs: objs,
			args: []string{"-n", "shop", "--all", "--ascii"},
			assertions: func(t *testing.T, out string, err error) {
				require.NoError(t, err)
				require.Contains(t, out, "FleetRollout prod-older (other)")
				require.Contains(t, out, "# succeeded  x failed  ~ in flight  . pending")
			},
		},
		{
			name: "json",
			objs: objs,
			args: []string{"prod", "-n", "shop", "-o", "json", "--color", "always"},
			assertions: func(t *testing.T, out string, err error) {
				require.NoError(t, err)
				var r report.Report
				require.NoError(t, json.Unmarshal([]byte(out), &r))
				require.Equal(t, "prod", r.FleetStage.Name)
				require.Len(t, r.Rollouts, 3)
				require.Equal(t, "prod-bad-rb", r.Rollouts[0].Name)
				require.Equal(t, "v1.4.0", r.Rollouts[0].Freight.Alias)
				require.Equal(t, []string{report.RoleCurrent, report.RoleLast, report.RoleRolledBack},
					[]string{r.Rollouts[0].Role, r.Rollouts[1].Role, r.Rollouts[2].Role})
				require.Equal(t, "prod-bad", r.Rollouts[2].Name)
				require.Equal(t, report.Totals{Total: 22, Succeeded: 10, Failed: 10, InFlight: 2}, r.Rollouts[2].Totals)
			},
		},
		{
			name: "colour on request",
			objs: objs,
			args: []string{"prod", "-n", "shop", "--color", "always"},
			assertions: func(t *testing.T, out string, err error) {
				require.NoError(t, err)
				require.Contains(t, out, "\x1b[32mReady\x1b[0m")
			},
		},
		{
			name: "text: a wave's analysis, each metric with its verdict, counts, last value, condition and why it waits",
			objs: analysedFleet(),
			args: []string{"prod", "-n", "shop", "--ascii"},
			assertions: func(t *testing.T, out string, err error) {
				require.NoError(t, err)
				require.Contains(t, out, "\n  canary [##############################] 20/20 Progressing\n"+
					"         analysis Inconclusive, started 2m00s ago\n"+
					"           error-ratio  Measuring     last 0.0012 (Successful)\n"+
					"             2/5 successful, 1 failed, 0 inconclusive\n"+
					"             condition: result < 0.01\n"+
					"           latency      Inconclusive  last no value (Inconclusive)\n"+
					"             0/3 successful, 0 failed, 4 inconclusive\n"+
					"             condition: result <= 1.2 * baseline\n"+
					"             waiting: no data: the query returned an empty result\n")
				require.Contains(t, out, "  pilot  [##############################]  2/2  Succeeded\n  canary [",
					"no analysis lines under a wave that ran none")
			},
		},
		{
			name: "json: the analyses with their conditions",
			objs: analysedFleet(),
			args: []string{"prod", "-n", "shop", "-o", "json"},
			assertions: func(t *testing.T, out string, err error) {
				require.NoError(t, err)
				var r report.Report
				require.NoError(t, json.Unmarshal([]byte(out), &r))
				require.Len(t, r.Rollouts[0].Analyses, 1)
				a := r.Rollouts[0].Analyses[0]
				require.Equal(t, "canary", a.Wave)
				require.Equal(t, "result <= 1.2 * baseline", a.Metrics[1].Condition)
				require.Equal(t, int32(4), a.Metrics[1].Inconclusive)
				require.Equal(t, "no data: the query returned an empty result", a.Metrics[1].Reason)
			},
		},
		{
			name: "no rollout yet",
			objs: []client.Object{fleetStage("", "", "")},
			args: []string{"-n", "shop"},
			assertions: func(t *testing.T, out string, err error) {
				require.NoError(t, err)
				require.Contains(t, out, "no last good Freight yet")
				require.Contains(t, out, "No FleetRollout yet")
			},
		},
		{
			name: "two FleetStages and no name",
			objs: []client.Object{fleetStage("", "", ""), other},
			args: []string{"-n", "shop"},
			assertions: func(t *testing.T, _ string, err error) {
				require.EqualError(t, err, `namespace "shop" has 2 FleetStages (prod, staging): name one`)
			},
		},
		{
			name: "no FleetStage",
			args: []string{"-n", "shop"},
			assertions: func(t *testing.T, _ string, err error) {
				require.EqualError(t, err, `namespace "shop" has no FleetStage: pass the Kargo Project with -n`)
			},
		},
		{
			name: "unknown FleetStage",
			objs: objs,
			args: []string{"nope", "-n", "shop"},
			assertions: func(t *testing.T, _ string, err error) {
				require.ErrorContains(t, err, `error getting FleetStage "nope" in namespace "shop"`)
			},
		},
		{
			name: "--dashboard-url prints the FleetStage's dashboard page",
			objs: objs,
			args: []string{"prod", "-n", "shop", "--dashboard-url", "http://127.0.0.1:3100/"},
			assertions: func(t *testing.T, out string, err error) {
				require.NoError(t, err)
				require.Contains(t, out, "\nDashboard: http://127.0.0.1:3100/projects/shop/fleetstages/prod\n")
			},
		},
		{
			name: "bad dashboard URL",
			args: []string{"--dashboard-url", "localhost:3100"},
			assertions: func(t *testing.T, _ string, err error) {
				require.EqualError(t, err, `--dashboard-url "localhost:3100": must be an http(s) URL`)
			},
		},
		{
			name: "bad output",
			args: []string{"-o", "xml"},
			assertions: func(t *testing.T, _ string, err error) {
				require.ErrorContains(t, err, `--output "xml": use one of json, yaml, kyaml, name, `)
			},
		},
		{
			name: "bad colour",
			args: []string{"--color", "pink"},
			assertions: func(t *testing.T, _ string, err error) {
				require.EqualError(t, err, `--color "pink": use auto, always or never`)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := newFakeClient("", tt.objs...)
			var out bytes.Buffer
			cmd := newStatusCommand(testStreams(&out), kubeOptions{client: c}, clocktesting.NewFakeClock(t0.Add(3*time.Minute)))
			got, err := execute(cmd, &out, tt.args...)
			tt.assertions(t, got, err)
		})
	}
}

func TestStatusCommand_watch(t *testing.T) {
	t.Parallel()
	c := newFakeClient("", fleetStage("", "", goodFreight))
	clk := clocktesting.NewFakeClock(t0)
	out := &syncBuffer{}
	cmd := newStatusCommand(testStreams(out), kubeOptions{client: c}, clk)
	cmd.SetArgs([]string{"prod", "-n", "shop", "--watch", "--interval", "1s"})
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	require.Eventually(t, func() bool { return strings.Count(out.String(), "FleetStage shop/prod") == 1 },
		5*time.Second, 5*time.Millisecond)
	require.Eventually(t, clk.HasWaiters, 5*time.Second, 5*time.Millisecond)
	clk.Step(time.Second)
	require.Eventually(t, func() bool { return strings.Count(out.String(), "FleetStage shop/prod") == 2 },
		5*time.Second, 5*time.Millisecond, "a second snapshot after one interval")
	cancel()
	require.NoError(t, <-done)
	require.NotContains(t, out.String(), "\x1b[", "snapshots, not redraws, when not on a terminal")
}

// syncBuffer is a bytes.Buffer safe for one writer and one reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestStatusCommand_wait(t *testing.T) {
	t.Parallel()
	// The pipeline promoted badFreight a moment ago: no rollout yet.
	c := newFakeClient("", fleetStage("", "prod-good", goodFreight),
		rollout("prod-good", fleetv1alpha1.DirectionForward, goodFreight, fleetv1alpha1.RolloutSucceeded, fleetv1alpha1.IntentRun, 0))
	clk := clocktesting.NewFakeClock(t0)
	out := &syncBuffer{}
	cmd := newStatusCommand(testStreams(out), kubeOptions{client: c}, clk)
	cmd.SetArgs([]string{"prod", "-n", "shop", "--wait", "--freight", badFreight, "--interval", "1s", "--timeout", "1h"})
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(context.Background()) }()
	step := func(change func()) {
		t.Helper()
		require.Eventually(t, clk.HasWaiters, 5*time.Second, 5*time.Millisecond)
		change()
		clk.Step(time.Second)
	}
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "waiting for the rollout of Freight "+badFreight) },
		5*time.Second, 5*time.Millisecond)
	bad := rollout("prod-bad", fleetv1alpha1.DirectionForward, badFreight, fleetv1alpha1.RolloutProgressing, fleetv1alpha1.IntentRun, time.Minute)
	bad.Status.Waves = []fleetv1alpha1.WaveProgress{{Name: "pilot", Total: 2, Succeeded: 1}}
	step(func() { require.NoError(t, c.Create(context.Background(), bad)) })
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "Progressing; pilot 1/2") },
		5*time.Second, 5*time.Millisecond, out.String())
	step(func() {
		bad.Status.Phase = fleetv1alpha1.RolloutHalted
		bad.Status.Message = `wave "pilot" breached its failure threshold`
		require.NoError(t, c.Status().Update(context.Background(), bad))
	})
	var err error
	select {
	case err = <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("--wait did not end on a halted rollout")
	}
	var exit *ExitError
	require.ErrorAs(t, err, &exit)
	require.Equal(t, report.ExitFailed, exit.Code)
	require.Contains(t, out.String(), "Halted; pilot 1/2; wave \"pilot\" breached its failure threshold")
	require.Equal(t, 3, strings.Count(out.String(), "\n"), "one line per change: %s", out.String())
	require.NotContains(t, out.String(), "\x1b[")
}

func TestStatusCommand_waitTimesOut(t *testing.T) {
	t.Parallel()
	c := newFakeClient("", fleetStage("", "", goodFreight))
	clk := clocktesting.NewFakeClock(t0)
	out := &syncBuffer{}
	cmd := newStatusCommand(testStreams(out), kubeOptions{client: c}, clk)
	cmd.SetArgs([]string{"prod", "-n", "shop", "--wait", "--interval", "1s", "--timeout", "2s"})
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(context.Background()) }()
	for range 2 {
		require.Eventually(t, clk.HasWaiters, 5*time.Second, 5*time.Millisecond)
		clk.Step(time.Second)
	}
	err := <-done
	var exit *ExitError
	require.ErrorAs(t, err, &exit)
	require.Equal(t, report.ExitTimedOut, exit.Code)
	require.ErrorContains(t, err, "timed out after 2s")
}

func TestAsKubectlPlugin(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	root := NewCommand(testStreams(&out))
	asKubectlPlugin(root)
	root.SetArgs([]string{"--help"})
	require.NoError(t, root.Execute())
	help := out.String()
	require.Contains(t, help, "kubectl fleet [command]")
	require.Contains(t, help, "status")
	require.NotContains(t, help, "controller ", "the controller runs in the cluster")
	require.NotContains(t, help, "  step ", "the step runner runs in Kargo")
}

// analysedFleet is shop/prod running a rollout whose canary wave measures
// two metrics, one of them without data.
func analysedFleet() []client.Object {
	fs := fleetStage("prod-good", "", goodFreight)
	count := int32(3)
	fs.Spec.Analysis = &fleetv1alpha1.FleetAnalysis{
		Prometheus: fleetv1alpha1.PrometheusSource{Address: "http://prometheus:9090"},
		Metrics: []fleetv1alpha1.AnalysisMetric{
			{Name: "error-ratio", Query: `sum(errors{cluster=~"{{targets.regex}}"})`, SuccessCondition: "result < 0.01"},
			{Name: "latency", Query: `avg(latency{cluster=~"{{targets.regex}}"})`, Count: &count,
				SuccessCondition: "result <= 1.2 * baseline", Baseline: &fleetv1alpha1.BaselineAnalysis{}},
		},
	}
	ro := rollout("prod-good", fleetv1alpha1.DirectionForward, goodFreight, fleetv1alpha1.RolloutProgressing,
		fleetv1alpha1.IntentRun, time.Minute)
	ro.Status.Waves = []fleetv1alpha1.WaveProgress{
		{Name: "pilot", Phase: fleetv1alpha1.WaveSucceeded, Total: 2, Succeeded: 2},
		{Name: "canary", Phase: fleetv1alpha1.WaveProgressing, Total: 20, Succeeded: 20,
			Analysis: &fleetv1alpha1.WaveAnalysisStatus{Phase: fleetv1alpha1.AnalysisInconclusive,
				StartedAt: metav1.NewTime(t0.Add(time.Minute)),
				Metrics: []fleetv1alpha1.MetricRun{
					{Name: "error-ratio", Phase: fleetv1alpha1.AnalysisMeasuring, Successful: 2, Failed: 1,
						Last: &fleetv1alpha1.MeasurementRecord{At: metav1.NewTime(t0.Add(2 * time.Minute)), Phase: "Successful",
							Value: "0.0012"}},
					{Name: "latency", Phase: fleetv1alpha1.AnalysisInconclusive, Inconclusive: 4,
						Reason: "no data: the query returned an empty result",
						Last:   &fleetv1alpha1.MeasurementRecord{At: metav1.NewTime(t0.Add(2 * time.Minute)), Phase: "Inconclusive"}},
				}}},
	}
	return []client.Object{fs, ro, freight(goodFreight, "v1.4.0")}
}
