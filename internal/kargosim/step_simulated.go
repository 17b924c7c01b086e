package kargosim

import (
	"context"
	"fmt"
	"hash/fnv"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// composeOutputStep is Kargo's "compose-output" step: its config becomes
// its outputs (and its task's).
type composeOutputStep struct{}

func (composeOutputStep) run(_ context.Context, sc *stepContext) stepResult {
	out := make(map[string]any, len(sc.config))
	for k, v := range sc.config {
		out[k] = v
	}
	return stepResult{status: kargo.StepSucceeded, output: out}
}

// simulatedStep stands in for a step kind the simulator does not execute
// (argocd-update, git-*, helm-*, kustomize-*, ...): its outcome comes from
// the target Stage's fault-injection knobs.
type simulatedStep struct {
	seed int64
}

func (s simulatedStep) run(_ context.Context, sc *stepContext) stepResult {
	f := sc.promo.faults
	targeted := f.step == "" || f.step == sc.alias
	if targeted && f.fault == FaultHang {
		wait := f.delay
		return stepResult{status: kargo.StepRunning, retryAfter: &wait}
	}
	if left := f.delay - sc.now.Sub(sc.startedAt); left > 0 {
		return stepResult{status: kargo.StepRunning, retryAfter: &left}
	}
	switch {
	case targeted && f.fault == FaultFail:
		return stepResult{status: kargo.StepFailed, err: &terminalError{
			fmt.Errorf("simulated failure of step %q (%s)", sc.alias, sc.kind)}}
	case targeted && f.fault == FaultError:
		return stepResult{status: kargo.StepErrored, err: fmt.Errorf("simulated error in step %q (%s)", sc.alias, sc.kind)}
	case f.failureRate > 0 && draw(s.seed, sc.promo.promotion, sc.alias) < f.failureRate:
		return stepResult{status: kargo.StepFailed, err: &terminalError{
			fmt.Errorf("simulated failure of step %q (%s, failure rate %g)", sc.alias, sc.kind, f.failureRate)}}
	}
	return stepResult{status: kargo.StepSucceeded, output: simulatedOutput(sc)}
}

// simulatedOutput gives the outputs later steps commonly read from the
// step kinds that have them.
func simulatedOutput(sc *stepContext) map[string]any {
	h := fnv.New64a()
	_, _ = h.Write([]byte(sc.promo.promotion + "/" + sc.alias))
	sha := fmt.Sprintf("%016x%016x%08x", h.Sum64(), h.Sum64()^0x5bd1e995, uint32(h.Sum64()))
	switch sc.kind {
	case "git-commit", "git-push", "github-push":
		return map[string]any{"commit": sha}
	case "git-open-pr":
		return map[string]any{"pr": map[string]any{"id": int64(h.Sum64() % 10000), "url": "https://simulated.invalid/pr/" + sha[:8]}}
	case "git-wait-for-pr", "git-merge-pr":
		return map[string]any{"commit": sha}
	}
	return nil
}
