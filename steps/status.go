package steps

import (
	"context"
	"encoding/json"
	"fmt"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

// StatusConfig is the config of the fleet-status step
// (schemas/fleet-status.json).
type StatusConfig struct {
	// Require is an expr-lang boolean over the fleet state (see
	// conditionEnv); when set and false, the step fails.
	Require string `json:"require,omitempty"`
	// Links are extra links shown among the outputs.
	Links []Link `json:"links,omitempty"`
}

// statusStep is the fleet-status step: it reports the FleetStage's target
// counts, wave membership, version distribution and current rollout as
// outputs, for later steps and for verification. It never waits.
type statusStep struct {
	store    Store
	programs *programCache
	opts     stepOptions
}

// NewStatusStep returns the fleet-status step.
func NewStatusStep(store Store, opts ...Option) Step {
	return &statusStep{store: store, programs: newProgramCache(), opts: optionsOf(opts)}
}

// Name implements Step.
func (s *statusStep) Name() string { return StatusStepName }

// Run implements Step.
func (s *statusStep) Run(ctx context.Context, in *Input) (Result, error) {
	cfg, err := s.convert(in.Config)
	if err != nil {
		return failed(err.Error(), nil), err
	}
	return s.run(ctx, in, cfg)
}

// convert validates and decodes the config and compiles its condition.
func (s *statusStep) convert(raw json.RawMessage) (StatusConfig, error) {
	var cfg StatusConfig
	if err := decodeConfig(StatusStepName, raw, &cfg); err != nil {
		return cfg, err
	}
	if cfg.Require != "" {
		if _, err := s.programs.compile(cfg.Require); err != nil {
			return cfg, err
		}
	}
	return cfg, nil
}

// FreightTargets is how many targets run a Freight, as fleet-status
// outputs show it.
type FreightTargets struct {
	// Freight is the Freight's name.
	Freight string `json:"freight"`
	// Targets is the number of targets running it.
	Targets int32 `json:"targets"`
}

// WaveMembers is one wave of a FleetStage, as fleet-status outputs show it.
type WaveMembers struct {
	// Name is the wave's name.
	Name string `json:"name"`
	// Stage is the wave Stage's name.
	Stage string `json:"stage"`
	// Members is the number of targets in the wave.
	Members int32 `json:"members"`
}

func (s *statusStep) run(ctx context.Context, in *Input, cfg StatusConfig) (Result, error) {
	fs := in.FleetStage
	ro, err := currentRollout(ctx, s.store, fs)
	if err != nil {
		return Result{}, err
	}
	onFreight, pct := onFreightCounts(fs, in.Stage, in.Context.Freight, true)
	t := fs.Status.Targets
	waves := make([]WaveMembers, 0, len(fs.Status.Waves))
	for _, w := range fs.Status.Waves {
		waves = append(waves, WaveMembers{Name: w.Name, Stage: w.Stage, Members: w.Members})
	}
	versions := make([]FreightTargets, 0, len(fs.Status.Versions))
	for _, v := range fs.Status.Versions {
		versions = append(versions, FreightTargets{Freight: v.Freight, Targets: v.Targets})
	}
	lastGood := ""
	if fs.Status.LastGoodFreight != nil {
		lastGood = fs.Status.LastGoodFreight.Name
	}
	rollout := map[string]any{"name": "", "phase": "", "counts": Counts{}}
	roName := ""
	if ro != nil {
		_, total := rolloutSummary(ro)
		roName = ro.Name
		rollout = map[string]any{"name": ro.Name, "phase": string(ro.Status.Phase), "counts": total}
	}
	outputs := map[string]any{
		"fleetStage": fs.Name,
		"targets": map[string]any{
			"candidates": t.Candidates, "selected": t.Selected, "excluded": t.Excluded, "unassigned": t.Unassigned,
		},
		"waves":            waves,
		"versions":         versions,
		"lastGoodFreight":  lastGood,
		"currentRollout":   fs.Status.CurrentRollout,
		"lastRollout":      fs.Status.LastRollout,
		"rollout":          rollout,
		"freight":          in.Context.Freight,
		"onFreight":        onFreight,
		"onFreightPercent": pct,
		"links":            linkVars{in: in, rollout: roName, dashboard: s.opts.dashboardURL}.links(cfg.Links),
	}
	summary := fmt.Sprintf("%d targets, %d on Freight %s (%d%%), %d versions",
		t.Selected, onFreight, shortName(in.Context.Freight), pct, len(versions))
	if cfg.Require != "" {
		ok, err := s.require(in, ro, cfg.Require)
		if err != nil {
			if IsTerminal(err) {
				return failed(err.Error(), outputs), err
			}
			return Result{}, err
		}
		if !ok {
			return failed(fmt.Sprintf("fleet check %q is false: %s", cfg.Require, summary), outputs), nil
		}
	}
	return succeeded(summary, outputs), nil
}

// require evaluates the require condition.
func (s *statusStep) require(in *Input, ro *fleetv1alpha1.FleetRollout, src string) (bool, error) {
	p, err := s.programs.compile(src)
	if err != nil {
		return false, err
	}
	return eval(p, src, conditionEnv(in, ro, true))
}
