package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

func TestCompletion(t *testing.T) {
	t.Parallel()
	objs := []client.Object{
		fleetStage("", "", goodFreight), testutil.MakeFleetStage("shop", "preview").Obj(),
		testutil.MakeFleetStage("other", "elsewhere").Obj(),
		rollout("prod-done", fleetv1alpha1.DirectionForward, goodFreight, fleetv1alpha1.RolloutSucceeded, fleetv1alpha1.IntentRun, 0),
		rollout("prod-bad", fleetv1alpha1.DirectionForward, badFreight, fleetv1alpha1.RolloutHalted, fleetv1alpha1.IntentRun, time.Minute),
		rollout("prod-bad-rb", fleetv1alpha1.DirectionRollback, goodFreight, fleetv1alpha1.RolloutRollingBack,
			fleetv1alpha1.IntentRun, 2*time.Minute),
	}
	older, newer := freight(goodFreight, "v1.4.0"), freight(badFreight, "v1.5.0")
	newer.CreationTimestamp = metav1.NewTime(older.CreationTimestamp.Add(time.Hour))
	project := func(name string, labelled bool) *corev1.Namespace {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if labelled {
			ns.Labels = map[string]string{"kargo.akuity.io/project": "true"}
		}
		return ns
	}
	target := func(id string) *kargo.Stage {
		return testutil.MakeStage("shop", "prod."+id).Labels(map[string]string{fleetv1alpha1.FleetStageLabel: "prod",
			fleetv1alpha1.RoleLabel: fleetv1alpha1.RoleTarget, fleetv1alpha1.TargetLabel: id}).Obj()
	}
	objs = append(objs, older, newer, project("shop", true), project("other", true), project("kube-system", false),
		target("eu-2"), target("eu-1"))
	kube := func() kubeOptions { return kubeOptions{client: newFakeClient("", objs...)} }
	tests := []struct {
		name          string
		cmd           *cobra.Command
		flags         []string
		args          []string
		flag          string
		toComplete    string
		want          []string
		wantDirective cobra.ShellCompDirective
	}{
		{
			name:          "FleetStages of the namespace",
			cmd:           newStatusCommand(testStreams(&bytes.Buffer{}), kube(), clocktesting.NewFakeClock(t0)),
			flags:         []string{"-n", "shop"},
			want:          []string{"preview", "prod"},
			wantDirective: cobra.ShellCompDirectiveNoFileComp,
		},
		{
			name:          "by prefix",
			cmd:           newTargetsCommand(testStreams(&bytes.Buffer{}), kube()),
			flags:         []string{"-n", "shop"},
			toComplete:    "pre",
			want:          []string{"preview"},
			wantDirective: cobra.ShellCompDirectiveNoFileComp,
		},
		{
			name:          "one FLEETSTAGE only",
			cmd:           newHistoryCommand(testStreams(&bytes.Buffer{}), kube()),
			flags:         []string{"-n", "shop"},
			args:          []string{"prod"},
			wantDirective: cobra.ShellCompDirectiveNoFileComp,
		},
		{
			name:          "--rollout of pause: the unfinished rollouts, newest first",
			cmd:           newPauseCommand(testStreams(&bytes.Buffer{}), kube()),
			flags:         []string{"-n", "shop"},
			args:          []string{"prod"},
			flag:          "rollout",
			want:          []string{"prod-bad-rb", "prod-bad"},
			wantDirective: cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveKeepOrder,
		},
		{
			name:          "--of of rollback: forward rollouts",
			cmd:           newRollbackCommand(testStreams(&bytes.Buffer{}), kube()),
			flags:         []string{"-n", "shop"},
			args:          []string{"prod"},
			flag:          "of",
			want:          []string{"prod-bad", "prod-done"},
			wantDirective: cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveKeepOrder,
		},
		{
			name:          "--wave of targets: the waves in order",
			cmd:           newTargetsCommand(testStreams(&bytes.Buffer{}), kube()),
			flags:         []string{"-n", "shop"},
			args:          []string{"prod"},
			flag:          "wave",
			want:          []string{"all"},
			wantDirective: cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveKeepOrder,
		},
		{
			name:          "-n: the Kargo Projects",
			cmd:           newStatusCommand(testStreams(&bytes.Buffer{}), kube(), clocktesting.NewFakeClock(t0)),
			flag:          "namespace",
			want:          []string{"other", "shop"},
			wantDirective: cobra.ShellCompDirectiveNoFileComp,
		},
		{
			name:          "--freight of break-glass: the Project's Freight, newest first, with its alias",
			cmd:           newBreakGlassCommand(testStreams(&bytes.Buffer{}), kube()),
			flags:         []string{"-n", "shop"},
			args:          []string{"prod"},
			flag:          "freight",
			want:          []string{badFreight + "\tv1.5.0", goodFreight + "\tv1.4.0"},
			wantDirective: cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveKeepOrder,
		},
		{
			name:          "--target of break-glass: the fleet's target IDs",
			cmd:           newBreakGlassCommand(testStreams(&bytes.Buffer{}), kube()),
			flags:         []string{"-n", "shop"},
			args:          []string{"prod"},
			flag:          "target",
			want:          []string{"eu-1", "eu-2"},
			wantDirective: cobra.ShellCompDirectiveNoFileComp,
		},
		{
			name:          "--context: the kubeconfig's contexts",
			cmd:           newHistoryCommand(testStreams(&bytes.Buffer{}), kube()),
			flags:         []string{"--kubeconfig", kubeconfigWithContexts(t, "staging", "prod-eu", "prod-us")},
			flag:          "context",
			toComplete:    "prod",
			want:          []string{"prod-eu", "prod-us"},
			wantDirective: cobra.ShellCompDirectiveNoFileComp,
		},
		{
			name:          "-o: the formats the verb takes",
			cmd:           newPlanCommand(testStreams(&bytes.Buffer{}), kube()),
			flag:          "output",
			want:          []string{"wide", "json", "yaml", "kyaml", "go-template", "go-template-file", "template", "templatefile", "jsonpath", "jsonpath-as-json", "jsonpath-file"},
			wantDirective: cobra.ShellCompDirectiveNoFileComp,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.NoError(t, tt.cmd.ParseFlags(tt.flags))
			complete := tt.cmd.ValidArgsFunction
			if tt.flag != "" {
				var ok bool
				complete, ok = tt.cmd.GetFlagCompletionFunc(tt.flag)
				require.True(t, ok)
			}
			got, directive := complete(tt.cmd, tt.args, tt.toComplete)
			require.Equal(t, tt.want, got)
			require.Equal(t, tt.wantDirective, directive)
		})
	}
}

// TestHelp checks every verb's help as an 80-column terminal shows it: no
// line is wider (but for a word that cannot break), kubectl's connection
// flags are listed apart, and flag texts hold no stray type names.
func TestHelp(t *testing.T) {
	t.Parallel()
	root := NewRootCommand(&bytes.Buffer{}, &bytes.Buffer{})
	for _, sub := range root.Commands() {
		if sub.Name() == "help" || sub.Name() == "completion" {
			continue
		}
		t.Run(sub.Name(), func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			cmd := NewRootCommand(&out, &out)
			cmd.SetArgs([]string{sub.Name(), "--help"})
			require.NoError(t, cmd.Execute())
			help := out.String()
			for _, line := range strings.Split(help, "\n") {
				if utf8.RuneCountInString(line) > helpWidth {
					// Only a word longer than the room left may overflow.
					indent := len(line) - len(strings.TrimLeft(line, " "))
					first, _, _ := strings.Cut(strings.TrimSpace(line), " ")
					require.Greater(t, indent+utf8.RuneCountInString(first), helpWidth, "help line wider than 80 columns: %q", line)
				}
			}
			if sub.Name() == "controller" || sub.Name() == "step" || sub.Name() == "version" {
				require.NotContains(t, help, "Connection flags")
				return
			}
			_, conn, ok := strings.Cut(help, "Connection flags (kubectl's):\n")
			require.True(t, ok, help)
			for _, flag := range []string{"--as string", "--as-group stringArray", "--token string", "-s, --server string",
				"--request-timeout string", "--kubeconfig string", "--context string", "-n, --namespace string"} {
				require.Contains(t, conn, flag)
			}
			own, _, _ := strings.Cut(help, "Connection flags")
			require.NotContains(t, own, "--as string", "the verb's own flags come first, apart")
		})
	}
}

// kubeconfigWithContexts writes a kubeconfig holding the named contexts.
func kubeconfigWithContexts(t *testing.T, names ...string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\ncontexts:\n")
	for _, n := range names {
		fmt.Fprintf(&b, "- {name: %s, context: {cluster: c}}\n", n)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o600))
	return path
}
