package steps

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/clock"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// GateConfig is the config of the fleet-gate step (schemas/fleet-gate.json).
// The gate is open when every check that is set passes; at least one must be
// set.
type GateConfig struct {
	// Approval waits until the Freight is approved for ApprovalStage.
	Approval bool `json:"approval,omitempty"`
	// ApprovalStage is the Stage the approval must name. Default: the
	// calling Stage.
	ApprovalStage string `json:"approvalStage,omitempty"`
	// Window waits until the FleetStage's change windows allow changes.
	Window bool `json:"window,omitempty"`
	// Condition is an expr-lang boolean over the fleet state (see
	// conditionEnv); the gate waits until it is true.
	Condition string `json:"condition,omitempty"`
	// Message is shown while the gate is closed.
	Message string `json:"message,omitempty"`
	// Links are extra links shown among the outputs.
	Links []Link `json:"links,omitempty"`
}

// gateStep is the fleet-gate step: Running while a change window is closed,
// an approval is missing or a condition over the fleet state is false, then
// Succeeded. It records nothing; Kargo polls it.
type gateStep struct {
	store    Store
	windows  WindowChecker
	clock    clock.PassiveClock
	programs *programCache
	opts     stepOptions
}

// NewGateStep returns the fleet-gate step. windows may be nil: a gate on
// windows then fails with a clear message instead of passing unchecked.
func NewGateStep(store Store, windows WindowChecker, clk clock.PassiveClock, opts ...Option) Step {
	return &gateStep{store: store, windows: windows, clock: clk, programs: newProgramCache(), opts: optionsOf(opts)}
}

// Name implements Step.
func (s *gateStep) Name() string { return GateStepName }

// Run implements Step.
func (s *gateStep) Run(ctx context.Context, in *Input) (Result, error) {
	cfg, err := s.convert(in.Config)
	if err != nil {
		return failed(err.Error(), nil), err
	}
	return s.run(ctx, in, cfg)
}

// convert validates and decodes the config and compiles its condition.
func (s *gateStep) convert(raw json.RawMessage) (GateConfig, error) {
	var cfg GateConfig
	if err := decodeConfig(GateStepName, raw, &cfg, requireOneGate); err != nil {
		return cfg, err
	}
	if cfg.Condition != "" {
		if _, err := s.programs.compile(cfg.Condition); err != nil {
			return cfg, err
		}
	}
	return cfg, nil
}

// requireOneGate refuses a gate that waits for nothing.
func requireOneGate(obj map[string]any) error {
	if obj["approval"] == true || obj["window"] == true || obj["condition"] != nil {
		return nil
	}
	return fmt.Errorf("set at least one of approval, window or condition")
}

func (s *gateStep) run(ctx context.Context, in *Input, cfg GateConfig) (Result, error) {
	c := in.Context
	outputs := map[string]any{
		"fleetStage": in.FleetStage.Name,
		"freight":    c.Freight,
		"links":      linkVars{in: in, dashboard: s.opts.dashboardURL}.links(cfg.Links),
	}
	var closed []string
	if cfg.Approval {
		stage := cmp.Or(cfg.ApprovalStage, c.Stage)
		freight, err := s.store.GetFreightApprovals(ctx, c.Project, c.Freight)
		if apierrors.IsNotFound(err) {
			err = &TerminalError{Err: fmt.Errorf("freight %q not found in project %q", c.Freight, c.Project)}
			return failed(err.Error(), outputs), err
		} else if err != nil {
			return Result{}, err
		}
		approved := freight.IsApprovedFor(stage)
		outputs["approved"] = approved
		if !approved {
			closed = append(closed, "approval: "+kargo.ApproveCommand(c.Project, c.Freight, stage))
		}
	}
	if cfg.Window {
		if s.windows == nil {
			err := &TerminalError{Err: fmt.Errorf("change windows cannot be evaluated by this server")}
			return failed(err.Error(), outputs), err
		}
		now := s.clock.Now()
		st, err := s.windows.CheckWindows(in.FleetStage, now)
		if err != nil {
			return failed(err.Error(), outputs), err
		}
		outputs["windowOpen"] = st.Open
		if !st.Open {
			w := "a change window"
			if st.Reason != "" {
				w += " (" + st.Reason + ")"
			}
			if !st.NextOpen.IsZero() {
				w += fmt.Sprintf(", next at %s (in %s)", st.NextOpen.UTC().Format(time.RFC3339),
					st.NextOpen.Sub(now).Round(time.Minute))
				outputs["nextWindow"] = st.NextOpen.UTC().Format(time.RFC3339)
			}
			closed = append(closed, w)
		}
	}
	if cfg.Condition != "" {
		ok, err := s.condition(ctx, in, cfg.Condition)
		if err != nil {
			if IsTerminal(err) {
				return failed(err.Error(), outputs), err
			}
			return Result{}, err
		}
		outputs["condition"] = ok
		if !ok {
			closed = append(closed, fmt.Sprintf("condition %q", cfg.Condition))
		}
	}
	if len(closed) > 0 {
		msg := "waiting for " + strings.Join(closed, "; ")
		if cfg.Message != "" {
			msg = cfg.Message + ": " + msg
		}
		return running(msg, outputs), nil
	}
	return succeeded("gate open", outputs), nil
}

// condition evaluates the condition over the fleet's state.
func (s *gateStep) condition(ctx context.Context, in *Input, src string) (bool, error) {
	p, err := s.programs.compile(src)
	if err != nil {
		return false, err
	}
	ro, err := currentRollout(ctx, s.store, in.FleetStage)
	if err != nil {
		return false, err
	}
	// A gate holds a target before its own steps: it is not on the Freight.
	return eval(p, src, conditionEnv(in, ro, false))
}

// currentRollout returns the FleetStage's current rollout, else its last
// one, else nil.
func currentRollout(ctx context.Context, store FleetReader, fs *fleetv1alpha1.FleetStage) (*fleetv1alpha1.FleetRollout, error) {
	name := cmp.Or(fs.Status.CurrentRollout, fs.Status.LastRollout)
	if name == "" {
		return nil, nil
	}
	ro, err := store.GetRollout(ctx, fs.Namespace, name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return ro, err
}
