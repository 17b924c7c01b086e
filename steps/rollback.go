package steps

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetrollout"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/rollout"
)

// RollbackConfig is the config of the fleet-rollback step
// (schemas/fleet-rollback.json). The FleetStage is the one of the calling
// Promotion's Stage.
type RollbackConfig struct {
	// Mode is start or wait. Default wait.
	Mode Mode `json:"mode,omitempty"`
	// Freight is the Freight to return to. Default: the FleetStage's
	// status.lastGoodFreight.
	Freight string `json:"freight,omitempty"`
	// RollbackOf is the FleetRollout whose targets return. Default: the
	// FleetStage's current rollout, else its last one.
	RollbackOf string `json:"rollbackOf,omitempty"`
	// Reason says why; it is recorded on the rollback FleetRollout.
	Reason string `json:"reason,omitempty"`
	// AnyFreight allows Freight that has not passed the fleet, or that is
	// held back after a breach.
	AnyFreight bool `json:"anyFreight,omitempty"`
	// Links are extra links shown among the outputs.
	Links []Link `json:"links,omitempty"`
}

// rollbackTargetFields are the fleet-rollback config fields that choose
// which Freight the fleet returns to and which rollout is undone.
var rollbackTargetFields = []string{"freight", "rollbackOf", "anyFreight"}

// refuseUnevaluatedReason refuses a reason holding an expression Kargo did
// not evaluate, or a call of secret(): the reason is stored on the
// FleetRollout for anyone who may read it, and a text that names a Secret
// is a request to copy it there, not a reason.
func refuseUnevaluatedReason(obj map[string]any) error {
	reason, _ := obj["reason"].(string)
	for _, bad := range []string{"${{", "secret("} {
		if strings.Contains(reason, bad) {
			return fmt.Errorf("reason: must be plain text; it contains %q, an expression Kargo did not evaluate "+
				"or a secret() call, which is never recorded on a FleetRollout", bad)
		}
	}
	return nil
}

// applyDefaults fills unset fields that need no cluster state.
func (c *RollbackConfig) applyDefaults() {
	if c.Mode == "" {
		c.Mode = ModeWait
	}
}

// rollbackStep is the fleet-rollback step: it asks the rollout controller to
// return the targets a rollout moved to the last good Freight, and reports
// the rollback's progress.
type rollbackStep struct {
	store Store
	opts  stepOptions
}

// NewRollbackStep returns the fleet-rollback step.
func NewRollbackStep(store Store, opts ...Option) Step {
	return &rollbackStep{store: store, opts: optionsOf(opts)}
}

// Name implements Step.
func (s *rollbackStep) Name() string { return RollbackStepName }

// Run implements Step.
func (s *rollbackStep) Run(ctx context.Context, in *Input) (Result, error) {
	cfg, err := s.convert(in.Config)
	if err != nil {
		return failed(err.Error(), nil), err
	}
	return s.run(ctx, in, cfg)
}

// convert validates and decodes the config.
func (s *rollbackStep) convert(raw json.RawMessage) (RollbackConfig, error) {
	var cfg RollbackConfig
	if err := decodeConfig(RollbackStepName, raw, &cfg, refuseUnevaluatedReason); err != nil {
		return cfg, err
	}
	cfg.applyDefaults()
	return cfg, nil
}

func (s *rollbackStep) run(ctx context.Context, in *Input, cfg RollbackConfig) (Result, error) {
	req, res, err := s.resolve(ctx, in, cfg)
	if err != nil || res != nil {
		if res != nil {
			return *res, err
		}
		return Result{}, err
	}
	ro, err := s.store.EnsureRollback(ctx, *req)
	var conflict *fleetrollout.ConflictError
	if errors.As(err, &conflict) {
		terr := &TerminalError{Err: conflict}
		return failed(terr.Error(), map[string]any{"fleetStage": in.FleetStage.Name, "rollout": conflict.Existing.Name}), terr
	}
	if err != nil {
		return Result{}, err
	}
	return s.result(in, cfg, ro), nil
}

// resolve turns the config into a rollback request, as rollout.PlanRollback
// decides it. Defaults are resolved once: they follow the FleetStage's
// status, which the rollback itself changes, so the rollback requested for
// a freight and rollout is found again by its own fields on later calls. A
// rollback that exists already is the answer (res), and so is the one this
// step call started, however it ended; an attempt another ask left short
// is retried, as PlanRollback decides for every asker.
func (s *rollbackStep) resolve(ctx context.Context, in *Input, cfg RollbackConfig) (*RolloutRequest, *Result, error) {
	fs, c := in.FleetStage, in.Context
	fail := func(err error) (*RolloutRequest, *Result, error) {
		var terr *TerminalError
		if !errors.As(err, &terr) {
			return nil, nil, err
		}
		outputs := map[string]any{"fleetStage": fs.Name}
		if refused := (*rollout.RollbackRefusal)(nil); errors.As(err, &refused) {
			outputs["reason"] = string(refused.Reason)
		}
		res := failed(terr.Error(), outputs)
		return nil, &res, terr
	}
	var freight *kargo.Freight
	if cfg.Freight != "" {
		// A Freight named must exist, whatever else the request says.
		f, err := s.freight(ctx, c.Project, cfg.Freight)
		if err != nil {
			return fail(err)
		}
		freight = f
	}
	records, err := s.store.RolloutRecords(ctx, fs, cfg.RollbackOf)
	if err != nil {
		return nil, nil, err
	}
	p := rollout.PlanRollback(rollout.RollbackRequest{Asker: rollout.AskedByStep, FleetStage: fs, Rollouts: records,
		Of: cfg.RollbackOf, Freight: cfg.Freight, AnyFreight: cfg.AnyFreight, StepKey: c.Key()})
	switch {
	case p.Refused != nil:
		return fail(&TerminalError{Err: p.Refused})
	case p.Existing != nil:
		res := s.result(in, cfg, p.Existing)
		return nil, &res, nil
	case freight == nil:
		if freight, err = s.freight(ctx, c.Project, p.Freight.Name); err != nil {
			return fail(err)
		}
	}
	return &RolloutRequest{
		FleetStage: fs,
		Freight:    freightRef(freight),
		Direction:  fleetv1alpha1.DirectionRollback,
		RollbackOf: p.Of.Name,
		Context:    c,
		Reason:     cfg.Reason,
		AnyFreight: cfg.AnyFreight,
		Attempt:    p.Attempt,
	}, nil, nil
}

// freight reads a Freight of the project; a missing one is terminal.
func (s *rollbackStep) freight(ctx context.Context, project, name string) (*kargo.Freight, error) {
	f, err := s.store.GetFreight(ctx, project, name)
	if apierrors.IsNotFound(err) {
		return nil, &TerminalError{Err: fmt.Errorf("freight %q not found in project %q", name, project)}
	}
	return f, err
}

// result maps a rollback rollout's status to the step's result.
func (s *rollbackStep) result(in *Input, cfg RollbackConfig, ro *fleetv1alpha1.FleetRollout) Result {
	plan, total := rolloutSummary(ro)
	phase := ro.Status.Phase
	if phase == "" {
		phase = fleetv1alpha1.RolloutPending
	}
	outputs := map[string]any{
		"fleetStage": in.FleetStage.Name,
		"freight":    ro.Spec.Freight.Name,
		"rollout":    ro.Name,
		"rollbackOf": ro.Spec.RollbackOf,
		"phase":      string(phase),
		"counts":     total,
		"plan":       plan,
		"targets":    rolloutTargets(ro, total),
		"links":      linkVars{in: in, rollout: ro.Name, dashboard: s.opts.dashboardURL}.links(cfg.Links),
	}
	switch phase {
	case fleetv1alpha1.RolloutSucceeded:
		return succeeded(fmt.Sprintf("rolled back %d targets to Freight %s (FleetRollout %q)",
			total.Succeeded, shortName(ro.Spec.Freight.Name), ro.Name), outputs)
	case fleetv1alpha1.RolloutFailed, fleetv1alpha1.RolloutAborted, fleetv1alpha1.RolloutSuperseded:
		msg := withDetail(fmt.Sprintf("rollback FleetRollout %q %s", ro.Name, strings.ToLower(string(phase))),
			ro.Status.Message)
		if reasons := failureSummary(ro.Status.Failures, 3); reasons != "" {
			msg += " (" + reasons + ")"
		}
		return failed(msg, outputs)
	}
	if cfg.Mode == ModeStart {
		if isPlanned(ro) {
			return succeeded(fmt.Sprintf("rollback to Freight %s requested: %d targets (FleetRollout %q)",
				shortName(ro.Spec.Freight.Name), rolloutTargets(ro, total), ro.Name), outputs)
		}
		return running(fmt.Sprintf("waiting for the controller to plan rollback FleetRollout %q", ro.Name), outputs)
	}
	msg := fmt.Sprintf("rollback FleetRollout %q %s: %d of %d targets rolled back, %d in flight, %d failed",
		ro.Name, strings.ToLower(string(phase)), total.Succeeded, total.Total, total.InFlight, total.Failed)
	return running(withDetail(msg, ro.Status.Message), outputs)
}
