package kargosim

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// stepContext is what a step runner gets: its alias, its evaluated config,
// when it first started and the Promotion around it.
type stepContext struct {
	alias     string
	kind      string
	config    map[string]any
	startedAt time.Time
	now       time.Time
	promo     *promoContext
}

// stepResult is what a step runner hands back. err marks an error: it counts
// against the step's errorThreshold unless terminal, in which case the step
// ends at once.
type stepResult struct {
	status     string
	message    string
	output     map[string]any
	retryAfter *time.Duration
	err        error
}

// terminalError ends a step at once, whatever its errorThreshold.
type terminalError struct{ err error }

func (e *terminalError) Error() string { return e.err.Error() }
func (e *terminalError) Unwrap() error { return e.err }

func isTerminal(err error) bool {
	var t *terminalError
	return errors.As(err, &t)
}

// stepRunner runs one step kind.
type stepRunner interface {
	run(ctx context.Context, sc *stepContext) stepResult
}

// stepKind registers a runner with the defaults Kargo gives its kind.
type stepKind struct {
	runner         stepRunner
	defaultTimeout time.Duration
	// propagatesToTask copies the step's outputs to its task's alias too
	// (compose-output does, so a task can expose outputs).
	propagatesToTask bool
}

// engineResult is the Promotion's new execution state.
type engineResult struct {
	phase       kargo.PromotionPhase
	message     string
	currentStep int64
	retryAfter  *time.Duration
	// err is a retryable step error: the Promotion stays Running and is
	// retried at once (controller backoff), not at the poll interval.
	err error
}

// engine runs a Promotion's steps from the current one on, the way Kargo's
// local orchestrator does, until a step is still running or all are done.
type engine struct {
	kinds map[string]stepKind
}

// execute runs the steps from start; p.metas and p.state are updated in
// place.
func (e *engine) execute(ctx context.Context, p *promoContext, steps []kargo.PromotionStep, start int64, now time.Time) engineResult {
	if p.state == nil {
		p.state = map[string]any{}
	}
	for i := start; i < int64(len(steps)); i++ {
		step := steps[i]
		meta := currentMeta(p, i, step)
		if meta.StartedAt == nil {
			skip, err := p.shouldSkip(ctx, step)
			switch {
			case err != nil:
				meta.Status = kargo.StepErrored
				meta.Message = fmt.Sprintf("error checking if step %q should be skipped: %s", step.As, err)
				continue
			case skip:
				meta.Status = kargo.StepSkipped
				continue
			}
		}
		kind, ok := e.kinds[step.Uses]
		if !ok {
			meta.Status = kargo.StepErrored
			meta.Message = fmt.Sprintf("step kind %q is not registered; verify the kind is correct; if you "+
				"are a Kargo Enterprise user, you may need to enable the promotion controller", step.Uses)
			continue
		}
		if meta.StartedAt == nil {
			meta.StartedAt = &metav1.Time{Time: now}
		}
		cfg, err := p.stepConfig(ctx, step)
		if err != nil {
			meta.Status = kargo.StepErrored
			meta.Message = fmt.Sprintf("failed to build step context: failed to get step config: %s", err)
			continue
		}
		res := kind.runner.run(ctx, &stepContext{
			alias: step.As, kind: step.Uses, config: cfg, startedAt: meta.StartedAt.Time, now: now, promo: p,
		})
		recordOutput(p, step.As, kind.propagatesToTask, res.output)
		err = reconcileResult(meta, step, res)
		if !stepDone(meta, step, kind, err, now) {
			return engineResult{phase: kargo.PromotionRunning, currentStep: i, retryAfter: res.retryAfter, err: err}
		}
	}
	phase, msg := finalPhase(steps, p.metas)
	return engineResult{phase: phase, message: msg, currentStep: int64(len(steps)) - 1}
}

// currentMeta returns the step's execution metadata, adding it on first
// visit.
func currentMeta(p *promoContext, i int64, step kargo.PromotionStep) *kargo.StepExecutionMetadata {
	if int64(len(p.metas)) <= i {
		p.metas = append(p.metas, kargo.StepExecutionMetadata{Alias: step.As, ContinueOnError: step.ContinueOnError})
	}
	return &p.metas[i]
}

func recordOutput(p *promoContext, alias string, toTask bool, output map[string]any) {
	if output == nil {
		return
	}
	p.state[alias] = output
	if ns := aliasNamespace(alias); toTask && ns != "" {
		task, _ := p.state[ns].(map[string]any)
		if task == nil {
			task = map[string]any{}
		}
		for k, v := range output {
			task[k] = v
		}
		p.state[ns] = task
	}
}

// reconcileResult records the step's status and message and returns the
// error that counts against the step, if any.
func reconcileResult(meta *kargo.StepExecutionMetadata, step kargo.PromotionStep, res stepResult) error {
	meta.Status, meta.Message = res.status, res.message
	if res.err != nil {
		if meta.Status != kargo.StepFailed {
			meta.Status = kargo.StepErrored
		}
		meta.Message = res.err.Error()
		return res.err
	}
	if res.status == kargo.StepErrored {
		msg := meta.Message
		if msg == "" {
			msg = "no details provided"
		}
		return fmt.Errorf("step %q errored: %s", step.As, msg)
	}
	return nil
}

// stepDone decides whether the step is over (and marks it finished) or
// must run again: errors count against the errorThreshold, and a step past
// its retry.timeout errors.
func stepDone(meta *kargo.StepExecutionMetadata, step kargo.PromotionStep, kind stepKind, err error, now time.Time) bool {
	finish := func() { meta.FinishedAt = &metav1.Time{Time: now} }
	switch {
	case meta.Status == kargo.StepSucceeded || meta.Status == kargo.StepSkipped:
		finish()
		return true
	case meta.Status == kargo.StepFailed && isTerminal(err):
		finish()
		return true
	case isTerminal(err):
		meta.Status = kargo.StepErrored
		meta.Message = fmt.Sprintf("an unrecoverable error occurred: %s", err)
		finish()
		return true
	case err != nil:
		meta.ErrorCount++
		if threshold := errorThreshold(step); meta.ErrorCount >= threshold {
			if meta.Status != kargo.StepFailed {
				meta.Status = kargo.StepErrored
			}
			meta.Message = fmt.Sprintf("step %q met error threshold of %d: %s", step.As, threshold, meta.Message)
			finish()
			return true
		}
	}
	if timeout := stepTimeout(step, kind.defaultTimeout); timeout > 0 && now.Sub(meta.StartedAt.Time) > timeout {
		meta.Status = kargo.StepErrored
		meta.Message = fmt.Sprintf("step %q timed out after %s", step.As, timeout)
		finish()
		return true
	}
	if err != nil {
		meta.Message += "; step will be retried"
	}
	return false
}

// stepSeverity orders step statuses from best to worst.
var stepSeverity = map[string]int{
	kargo.StepSucceeded: 0, kargo.StepSkipped: 1, kargo.StepRunning: 2,
	kargo.StepAborted: 3, kargo.StepFailed: 4, kargo.StepErrored: 5,
}

// finalPhase is the Promotion phase of the worst step that does not
// continue on error.
func finalPhase(steps []kargo.PromotionStep, metas []kargo.StepExecutionMetadata) (kargo.PromotionPhase, string) {
	worst, msg := kargo.StepSucceeded, ""
	for i, m := range metas {
		if i < len(steps) && steps[i].ContinueOnError {
			continue
		}
		if stepSeverity[m.Status] > stepSeverity[worst] {
			worst, msg = m.Status, m.Message
		}
	}
	switch worst {
	case kargo.StepSucceeded, kargo.StepSkipped:
		return kargo.PromotionSucceeded, msg
	case kargo.StepAborted:
		return kargo.PromotionAborted, msg
	case kargo.StepFailed:
		return kargo.PromotionFailed, msg
	default:
		return kargo.PromotionErrored, msg
	}
}
