package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kargo-fleet/kargo-fleet/internal/audit"
	"github.com/kargo-fleet/kargo-fleet/internal/cli"
	"github.com/kargo-fleet/kargo-fleet/internal/strutil"
)

// auditStory are the decisions the story's trail must hold, in this order:
// the good rollout, the bad one's breach and rollback.
var auditStory = []string{"RolloutStarted", "RolloutSucceeded", "RolloutStarted", "ThresholdBreached",
	"RollbackStarted", "RollbackFinished"}

// auditShown are the actions the demo prints of the trail: the story's
// turns, not every wave.
var auditShown = []string{"RolloutStarted", "RolloutSucceeded", "ThresholdBreached", "AnalysisMetricFailed",
	"RollbackStarted", "RollbackFinished", "GateWaiting"}

// checkAudit reads the fleet's audit trail as an operator would, with
// `kargo-fleet audit --verify`: every decision of the story is there, in
// order, and the chain is whole.
func (s *story) checkAudit(ctx context.Context) (string, error) {
	var entries []audit.Entry
	var verdict string
	// The trail is written within a second of each decision.
	for deadline := time.Now().Add(statusSettle); ; {
		var err error
		if entries, verdict, err = s.auditTrail(ctx); err != nil {
			return "", err
		}
		if inOrder(entries, auditStory) {
			break
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("the audit trail does not hold %v in order: %s", auditStory, actionsOf(entries))
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	fmt.Fprintf(s.out, "$ kargo-fleet audit %s -n %s --verify   # the story's turns\n", FleetStageName, Project)
	for _, e := range entries {
		if slices.Contains(auditShown, e.Action) {
			fmt.Fprintf(s.out, "  %3d %s %-20s %-48s %s\n", e.Sequence, e.Time.UTC().Format("15:04:05"), e.Action, e.Actor,
				strutil.EllipsisRunes(e.Message, 90))
		}
	}
	fmt.Fprintln(s.out, verdict)
	return fmt.Sprintf("%d decisions recorded; %s", len(entries), verdict), nil
}

// auditTrail runs `kargo-fleet audit --verify -o jsonl` and returns the
// records and what the chain check said.
func (s *story) auditTrail(ctx context.Context) ([]audit.Entry, string, error) {
	var out, errOut bytes.Buffer
	cmd := cli.NewRootCommand(&out, &errOut)
	cmd.SetArgs([]string{"audit", FleetStageName, "-n", Project, "--kubeconfig", s.kubeconfig, "--verify", "-o", "jsonl"})
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	if err := cmd.ExecuteContext(ctx); err != nil {
		return nil, "", fmt.Errorf("kargo-fleet audit: %w: %s", err, errOut.String())
	}
	var entries []audit.Entry
	dec := json.NewDecoder(&out)
	for dec.More() {
		var e audit.Entry
		if err := dec.Decode(&e); err != nil {
			return nil, "", fmt.Errorf("kargo-fleet audit -o jsonl printed no record: %w", err)
		}
		entries = append(entries, e)
	}
	return entries, strings.TrimSpace(errOut.String()), nil
}

// inOrder says actions occur in entries in that order (others between).
func inOrder(entries []audit.Entry, actions []string) bool {
	i := 0
	for _, e := range entries {
		if i < len(actions) && e.Action == actions[i] {
			i++
		}
	}
	return i == len(actions)
}

func actionsOf(entries []audit.Entry) string {
	out := make([]string, len(entries))
	for i := range entries {
		out[i] = entries[i].Action
	}
	return strings.Join(out, ", ")
}
