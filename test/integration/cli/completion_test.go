//go:build integration

package cli_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/cli"
	"github.com/kargo-fleet/kargo-fleet/internal/envtest"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

// complete runs the shell's completion request (`kargo-fleet __complete`)
// for the words typed so far, the last one being completed, and returns the
// suggestions.
func complete(t *testing.T, words ...string) []string {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := cli.NewRootCommand(&out, &errOut)
	// The verb first, then the kubeconfig, then what was typed after it.
	cmd.SetArgs(append([]string{"__complete", words[0], "--kubeconfig", kubeconfig}, words[1:]...))
	require.NoError(t, cmd.Execute(), errOut.String())
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	// The last line is cobra's directive (":4").
	require.True(t, strings.HasPrefix(lines[len(lines)-1], ":"), out.String())
	return lines[:len(lines)-1]
}

// TestCompletion completes FleetStage and FleetRollout names from a real
// API server, as a shell does on Tab.
func TestCompletion(t *testing.T) {
	const ns = "complete-shop"
	create(t, envtest.ProjectNamespace(ns))
	create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "complete-other"}})
	for _, name := range []string{"prod", "preview", "staging"} {
		create(t, testutil.MakeFleetStage(ns, name).Obj())
	}
	create(t, testutil.MakeFleetStage("complete-other", "elsewhere").Obj())
	for _, name := range []string{"prod-1a2b3c4d5e", "prod-9f8e7d6c5b"} {
		create(t, &fleetv1alpha1.FleetRollout{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
			Labels: map[string]string{fleetv1alpha1.FleetStageLabel: "prod"}},
			Spec: fleetv1alpha1.FleetRolloutSpec{FleetStage: "prod", Direction: fleetv1alpha1.DirectionForward,
				Freight: fleetv1alpha1.FreightReference{Name: "1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d"}}})
	}

	require.Equal(t, []string{"preview", "prod", "staging"}, complete(t, "status", "-n", ns, ""))
	require.Equal(t, []string{"preview", "prod"}, complete(t, "pause", "-n", ns, "pr"))
	require.Equal(t, []string{"elsewhere"}, complete(t, "targets", "-n", "complete-other", ""))
	require.Equal(t, []string{"prod-9f8e7d6c5b", "prod-1a2b3c4d5e"},
		complete(t, "rollback", "prod", "-n", ns, "--of", ""), "newest first")
	require.Equal(t, []string{"all"}, complete(t, "targets", "prod", "-n", ns, "--wave", ""))
	require.Empty(t, complete(t, "status", "-n", ns, "--as", "nobody", ""),
		"kubectl's flags apply to completion too: nobody may list nothing")
}
