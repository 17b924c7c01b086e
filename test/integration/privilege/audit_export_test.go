//go:build integration

package privilege_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/audit"
	"github.com/kargo-fleet/kargo-fleet/internal/cli"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetenv"
)

// realisticRecord is a record the size of a rollout's: a wave decision
// naming a Freight, a wave Stage, a person and their identity.
func realisticRecord(i int, at time.Time) fleetv1alpha1.AuditRecord {
	return fleetv1alpha1.AuditRecord{
		Time:     metav1.NewMicroTime(at),
		Action:   "WavePassed",
		Type:     "Normal",
		Actor:    "email:alice@example.com",
		Identity: "system:serviceaccount:kargo:kargo-api",
		Rollout:  "prod-9f8e7d6c5b4a-01jf3k2m",
		Wave:     "general",
		Freight:  "9f8e7d6c5b4a39281706f5e4d3c2b1a09f8e7d6c",
		Stage:    "prod-general",
		Message:  fmt.Sprintf("Wave general passed: %d succeeded, 0 failed of 880", 880-i%7),
	}
}

// TestAuditExportOf100000Records stores a trail of 100,000 records as the
// controller lays it out (391 segments) and exports it with `kargo-fleet
// audit --verify -o jsonl` and `-o csv`; it reports the bytes stored per
// 1,000 records and the export times (docs/audit.md).
func TestAuditExportOf100000Records(t *testing.T) {
	ctx := context.Background()
	const ns, n = "audit-export", 100_000
	require.NoError(t, env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	records := make([]fleetv1alpha1.AuditRecord, n)
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for i := range records {
		records[i] = realisticRecord(i, start.Add(time.Duration(i)*time.Second))
	}
	audit.Chain(audit.Head{}, records)
	plan := audit.PlanAppend(ns, "prod", nil, "", records)
	stored := 0
	for _, s := range plan.Create {
		require.NoError(t, controller.Create(ctx, s))
		body, err := json.Marshal(s)
		require.NoError(t, err)
		stored += len(body)
	}
	report := fmt.Sprintf("report: audit trail of %d records in %d segments: %d bytes of JSON, %.0f bytes per 1,000 records",
		n, len(plan.Create), stored, float64(stored)/float64(n/1000))

	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, fleetenv.WriteKubeconfig(env.Config, kubeconfig))
	export := func(format string, out io.Writer) time.Duration {
		var errOut bytes.Buffer
		cmd := cli.NewRootCommand(out, &errOut)
		cmd.SetArgs([]string{"audit", "-n", ns, "-o", format, "--verify", "--kubeconfig", kubeconfig})
		began := time.Now()
		require.NoError(t, cmd.Execute(), errOut.String())
		require.Contains(t, errOut.String(), fmt.Sprintf("audit trail of prod is whole: %d record(s), 1 to %d", n, n))
		return time.Since(began)
	}
	var lines lineCounter
	jsonl := export("jsonl", &lines)
	require.Equal(t, n, lines.n)
	lines = lineCounter{}
	csv := export("csv", &lines)
	require.Equal(t, n+1, lines.n)
	fmt.Printf("%s; export with --verify: jsonl %s, csv %s\n", report, jsonl.Round(time.Millisecond), csv.Round(time.Millisecond))
}

// lineCounter counts the lines written to it.
type lineCounter struct{ n int }

func (c *lineCounter) Write(p []byte) (int, error) {
	c.n += strings.Count(string(p), "\n")
	return len(p), nil
}
