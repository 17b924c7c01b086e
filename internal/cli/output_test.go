package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
	"github.com/kargo-fleet/kargo-fleet/internal/report"
)

// TestOutputFormats runs every verb that reads the cluster with each -o
// format: json and yaml print the same document, name prints the objects
// shown or changed as resource/name, templates read the document.
func TestOutputFormats(t *testing.T) {
	t.Parallel()
	status := func(s genericiooptions.IOStreams, k kubeOptions) *cobra.Command {
		return newStatusCommand(s, k, clocktesting.NewFakeClock(t0.Add(3*time.Minute)))
	}
	running := runningFleet()
	tests := []struct {
		name       string
		cmd        func(genericiooptions.IOStreams, kubeOptions) *cobra.Command
		objs       []client.Object
		args       []string
		assertions func(t *testing.T, out string, err error)
	}{
		{
			name: "status -o yaml is the json report", cmd: status, objs: goldenFleet(),
			args: []string{"prod", "-n", "shop", "-o", "yaml"},
			assertions: func(t *testing.T, out string, err error) {
				require.NoError(t, err)
				var r report.Report
				require.NoError(t, yaml.Unmarshal([]byte(out), &r))
				require.Equal(t, "prod-bad-rb", r.Rollouts[0].Name)
			},
		},
		{
			name: "status -o name: the FleetStage and the rollouts shown", cmd: status, objs: goldenFleet(),
			args: []string{"prod", "-n", "shop", "-o", "name"},
			assertions: func(t *testing.T, out string, err error) {
				require.NoError(t, err)
				require.Equal(t, "fleetstage.fleet.kargo-fleet.io/prod\nfleetrollout.fleet.kargo-fleet.io/prod-good\n"+
					"fleetrollout.fleet.kargo-fleet.io/prod-bad\nfleetrollout.fleet.kargo-fleet.io/prod-bad-rb\n", out)
			},
		},
		{
			name: "status -o jsonpath reads the report", cmd: status, objs: goldenFleet(),
			args: []string{"prod", "-n", "shop", "-o", "jsonpath={.rollouts[*].phase}"},
			assertions: func(t *testing.T, out string, err error) {
				require.NoError(t, err)
				require.Equal(t, "RollingBack Succeeded Halted", out)
			},
		},
		{
			name: "status has no wide form", cmd: status, objs: goldenFleet(), args: []string{"-o", "wide"},
			assertions: func(t *testing.T, _ string, err error) {
				require.ErrorContains(t, err, "--output wide: this command has no wide form")
			},
		},
		{
			name: "a template that does not parse fails before the cluster is read", cmd: status,
			args: []string{"-o", "jsonpath={.rollouts["},
			assertions: func(t *testing.T, _ string, err error) {
				require.ErrorContains(t, err, `--output "jsonpath={.rollouts["`)
			},
		},
		{
			name: "targets -o name: the target Stages", cmd: newTargetsCommand, objs: goldenTargets(),
			args: []string{"prod", "-n", "shop", "-o", "name", "--wave", "pilot"},
			assertions: func(t *testing.T, out string, err error) {
				require.NoError(t, err)
				require.Equal(t, "stage.kargo.akuity.io/prod-us-east-1-01\n", out)
			},
		},
		{
			name: "targets -o wide adds columns", cmd: newTargetsCommand, objs: goldenTargets(),
			args: []string{"prod", "-n", "shop", "-o", "wide"},
			assertions: func(t *testing.T, out string, err error) {
				require.NoError(t, err)
				require.Contains(t, out, "SOURCE")
				require.Contains(t, out, "region=us-east-1")
			},
		},
		{
			name: "the text formats of earlier releases still select text", cmd: newTargetsCommand, objs: goldenTargets(),
			args: []string{"prod", "-n", "shop", "-o", "table"},
			assertions: func(t *testing.T, out string, err error) {
				require.NoError(t, err)
				require.True(t, strings.HasPrefix(out, "STAGE "), out)
			},
		},
		{
			name: "history -o name: the FleetRollouts", cmd: newHistoryCommand, objs: historyFleet(),
			args: []string{"prod", "-n", "shop", "-o", "name"},
			assertions: func(t *testing.T, out string, err error) {
				require.NoError(t, err)
				require.Equal(t, "fleetrollout.fleet.kargo-fleet.io/prod-bad\nfleetrollout.fleet.kargo-fleet.io/prod-bad-rb\n", out)
			},
		},
		{
			name: "plan -o wide adds the resolved settings", cmd: newPlanCommand, objs: planFleet(),
			args: []string{"prod", "-n", "shop", "-o", "wide"},
			assertions: func(t *testing.T, out string, err error) {
				require.NoError(t, err)
				require.Contains(t, out, "UNHEALTHY GRACE")
			},
		},
		{
			name: "plan -o yaml is the plan preview", cmd: newPlanCommand, objs: planFleet(),
			args: []string{"prod", "-n", "shop", "-o", "yaml"},
			assertions: func(t *testing.T, out string, err error) {
				require.NoError(t, err)
				var pv plan.PlanPreview
				require.NoError(t, yaml.Unmarshal([]byte(out), &pv))
				require.Equal(t, 12, pv.Selected)
			},
		},
		{
			name: "plan has no name form: it prints no object", cmd: newPlanCommand, args: []string{"-o", "name"},
			assertions: func(t *testing.T, _ string, err error) {
				require.ErrorContains(t, err, `--output "name": use one of wide, json, yaml`)
			},
		},
		{
			name: "pause -o name: the rollouts now paused", cmd: newPauseCommand, objs: running,
			args: []string{"prod", "-n", "shop", "-o", "name"},
			assertions: func(t *testing.T, out string, err error) {
				require.NoError(t, err)
				require.Equal(t, "fleetrollout.fleet.kargo-fleet.io/prod-a\n", out)
			},
		},
		{
			name: "abort --dry-run -o json: the rollout as it would be", cmd: newAbortCommand, objs: running,
			args: []string{"prod", "-n", "shop", "-o", "json", "--dry-run"},
			assertions: func(t *testing.T, out string, err error) {
				require.NoError(t, err)
				var ro fleetv1alpha1.FleetRollout
				require.NoError(t, json.Unmarshal([]byte(out), &ro))
				require.Equal(t, "FleetRollout", ro.Kind)
				require.Equal(t, fleetv1alpha1.IntentAbort, ro.Spec.Intent)
			},
		},
		{
			name: "rollback --dry-run -o yaml: the FleetRollout it would create", cmd: newRollbackCommand,
			objs: append(goldenFleet()[:1:1], rollout("prod-bad", fleetv1alpha1.DirectionForward, badFreight,
				fleetv1alpha1.RolloutHalted, fleetv1alpha1.IntentRun, time.Minute)),
			args: []string{"prod", "-n", "shop", "--of", "prod-bad", "--dry-run", "-o", "yaml"},
			assertions: func(t *testing.T, out string, err error) {
				require.NoError(t, err)
				var ro fleetv1alpha1.FleetRollout
				require.NoError(t, yaml.Unmarshal([]byte(out), &ro))
				require.Equal(t, "prod-bad-rb", ro.Name)
				require.Equal(t, fleetv1alpha1.DirectionRollback, ro.Spec.Direction)
				require.Equal(t, "prod-bad", ro.Spec.RollbackOf)
				require.Equal(t, goodFreight, ro.Spec.Freight.Name)
			},
		},
		{
			name: "rollback -o name: the rollback created", cmd: newRollbackCommand,
			objs: append(goldenFleet()[:1:1], rollout("prod-bad", fleetv1alpha1.DirectionForward, badFreight,
				fleetv1alpha1.RolloutHalted, fleetv1alpha1.IntentRun, time.Minute)),
			args: []string{"prod", "-n", "shop", "--of", "prod-bad", "-o", "name"},
			assertions: func(t *testing.T, out string, err error) {
				require.NoError(t, err)
				require.Equal(t, "fleetrollout.fleet.kargo-fleet.io/prod-bad-rb\n", out)
			},
		},
		{
			name: "resume -o json with no unfinished rollout: an empty List", cmd: newResumeCommand, objs: planFleet(),
			args: []string{"prod", "-n", "shop", "-o", "json"},
			assertions: func(t *testing.T, out string, err error) {
				require.NoError(t, err)
				require.JSONEq(t, `{"apiVersion":"v1","kind":"List","metadata":{},"items":[]}`, out)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			got, err := execute(tt.cmd(testStreams(&out), kubeOptions{client: newFakeClient("", tt.objs...)}), &out, tt.args...)
			tt.assertions(t, got, err)
		})
	}
}

// goldenTargets is planFleet with three target Stages.
func goldenTargets() []client.Object {
	objs := planFleet()
	for _, st := range []struct{ id, wave string }{{"us-east-1-01", "pilot"}, {"eu-west-1-01", "canary"}} {
		objs = append(objs, targetStage(st.id, st.wave, goodFreight))
	}
	return objs
}

func TestStatusCommand_watchFits80Columns(t *testing.T) {
	t.Parallel()
	out := &terminal80{}
	kube := kubeOptions{client: newFakeClient("", goldenFleet()...), flags: genericclioptions.NewConfigFlags(false)}
	*kube.flags.Namespace = "shop"
	o := &statusOptions{kube: kube, output: newOutputOptions(false, true),
		streams: genericiooptions.IOStreams{Out: out}, clock: clocktesting.NewFakeClock(t0), tty: true,
		width: terminalWidth(out), fleetStage: "prod", barWidth: report.DefaultBarWidth, color: colorAlways}
	c, ns, err := o.kube.connect()
	require.NoError(t, err)
	frame, err := o.render(t.Context(), c, ns)
	require.NoError(t, err)
	require.NoError(t, report.NewLive(out, true).WithWidth(o.width).Draw(string(frame)))
	for _, line := range strings.Split(string(frame), "\n") {
		require.LessOrEqual(t, visibleWidth(line), 80, "%q", line)
	}
	require.Contains(t, out.String(), "\x1b[J", "redrawn in place")
	require.Contains(t, out.String(), "at most 2 may fail", "the breach message wraps instead of being cut")
}

// visibleWidth counts a line's columns, less ANSI colour sequences.
func visibleWidth(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '\x1b' {
			for i < len(s) && s[i] != 'm' {
				i++
			}
			continue
		}
		if utf8.RuneStart(s[i]) {
			n++
		}
	}
	return n
}
