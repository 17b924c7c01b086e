//go:build integration

package rollout_test

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kargo-fleet/kargo-fleet/internal/audit"
	"github.com/kargo-fleet/kargo-fleet/internal/cli"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetenv"
)

// auditTrail deletes the namespace's Events, as the API server's
// --event-ttl would, then reads the FleetStage's audit trail with
// `kargo-fleet audit --verify -o jsonl` as the administrator, once it holds
// as many records of each action as want lists, and checks the chain is
// whole. The controller writes a decision within a second of making it.
func auditTrail(t *testing.T, ns, fleetStage string, want ...string) []audit.Entry {
	t.Helper()
	require.NoError(t, env.Client.DeleteAllOf(context.Background(), &corev1.Event{}, client.InNamespace(ns)))
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, fleetenv.WriteKubeconfig(env.Config, kubeconfig))
	var entries []audit.Entry
	var errOut bytes.Buffer
	require.Eventually(t, func() bool {
		var out bytes.Buffer
		errOut.Reset()
		cmd := cli.NewRootCommand(&out, &errOut)
		cmd.SetArgs([]string{"audit", fleetStage, "-n", ns, "-o", "jsonl", "--verify", "--kubeconfig", kubeconfig})
		if cmd.Execute() != nil {
			return false
		}
		entries = entries[:0]
		dec := json.NewDecoder(&out)
		for dec.More() {
			var e audit.Entry
			require.NoError(t, dec.Decode(&e))
			entries = append(entries, e)
		}
		needed := map[string]int{}
		for _, a := range want {
			needed[a]++
		}
		for _, e := range entries {
			needed[e.Action]--
		}
		for _, n := range needed {
			if n > 0 {
				return false
			}
		}
		return true
	}, wait, tick, "the audit trail of %s/%s holds %v: %s; it holds %v", ns, fleetStage, want, errOut.String(), actions(entries))
	require.Contains(t, errOut.String(), "audit trail of "+fleetStage+" is whole")
	return entries
}

// firstOf is the index of the first record of action that match says is
// the one; -1 when none.
func firstOf(entries []audit.Entry, action string, match func(*audit.Entry) bool) int {
	return slices.IndexFunc(entries, func(e audit.Entry) bool { return e.Action == action && (match == nil || match(&e)) })
}

func actions(entries []audit.Entry) []string {
	out := make([]string, len(entries))
	for i := range entries {
		out[i] = entries[i].Action
	}
	return out
}
