package steps

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/dashboard/link"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/rollout"
)

// Mode says whether a long step starts its work or waits for it.
type Mode string

// Modes of fleet-wave and fleet-rollback.
const (
	// ModeStart records the request and returns as soon as the work is
	// planned, with the plan, counts and links as outputs: Kargo shows the
	// outputs of finished steps only.
	ModeStart Mode = "start"
	// ModeWait reports Running until the work is done.
	ModeWait Mode = "wait"
)

// WaveConfig is the config of the fleet-wave step (schemas/fleet-wave.json).
// The wave, its FleetStage and the Freight come from the calling Promotion,
// which must be a Promotion of a wave Stage.
type WaveConfig struct {
	// Mode is start or wait. Default wait.
	Mode Mode `json:"mode,omitempty"`
	// Links are extra links shown among the outputs.
	Links []Link `json:"links,omitempty"`
}

// applyDefaults fills unset fields.
func (c *WaveConfig) applyDefaults() {
	if c.Mode == "" {
		c.Mode = ModeWait
	}
}

// waveStep is the fleet-wave step: it asks the rollout controller to run the
// calling wave Stage's wave for the Promotion's Freight and reports the
// wave's progress.
//
// Recording intent: get or create the FleetRollout of (FleetStage, Freight),
// then record the wave request on it. Reading state: the wave's phase in the
// rollout's status decides the result. Waves run in order: a wave refuses
// Freight that has not passed the previous wave Stage (Kargo lets an approval
// put Freight into any wave Stage).
type waveStep struct {
	store Store
	opts  stepOptions
}

// NewWaveStep returns the fleet-wave step.
func NewWaveStep(store Store, opts ...Option) Step {
	return &waveStep{store: store, opts: optionsOf(opts)}
}

// Name implements Step.
func (s *waveStep) Name() string { return WaveStepName }

// Run implements Step.
func (s *waveStep) Run(ctx context.Context, in *Input) (Result, error) {
	cfg, err := s.convert(in.Config)
	if err != nil {
		return failed(err.Error(), nil), err
	}
	return s.run(ctx, in, cfg)
}

// convert validates and decodes the config.
func (s *waveStep) convert(raw json.RawMessage) (WaveConfig, error) {
	var cfg WaveConfig
	if err := decodeConfig(WaveStepName, raw, &cfg); err != nil {
		return cfg, err
	}
	cfg.applyDefaults()
	return cfg, nil
}

func (s *waveStep) run(ctx context.Context, in *Input, cfg WaveConfig) (Result, error) {
	fs, c := in.FleetStage, in.Context
	wave := in.Wave()
	idx := waveIndex(fs, wave)
	if in.Stage.Labels[fleetv1alpha1.RoleLabel] != fleetv1alpha1.RoleWave || idx < 0 {
		err := &TerminalError{Err: fmt.Errorf("stage %q is not a wave Stage of FleetStage %q", c.Stage, fs.Name)}
		return failed(err.Error(), nil), err
	}
	if res, ok := s.recordsRollback(ctx, in, wave); ok {
		return res, nil
	}
	freight, err := s.store.GetFreight(ctx, c.Project, c.Freight)
	if err != nil {
		if apierrors.IsNotFound(err) {
			err = &TerminalError{Err: fmt.Errorf("freight %q not found in project %q", c.Freight, c.Project)}
			return failed(err.Error(), nil), err
		}
		return Result{}, err
	}
	if res, ok, err := s.gesture(ctx, in, wave); ok || err != nil {
		return res, err
	}
	if idx > 0 {
		prev := fs.Spec.Waves[idx-1].Name
		prevStage := waveStageName(fs, prev)
		if !freight.IsVerifiedIn(prevStage) {
			msg := fmt.Sprintf("wave %q refused Freight %s: it has not passed wave %q (Stage %q); waves run in order",
				wave, shortName(c.Freight), prev, prevStage)
			return failed(msg, map[string]any{"fleetStage": fs.Name, "wave": wave, "freight": c.Freight}), nil
		}
	}

	ro, err := s.store.EnsureRollout(ctx, RolloutRequest{
		FleetStage: fs,
		Freight:    freightRef(freight),
		Direction:  fleetv1alpha1.DirectionForward,
		Context:    c,
		Wave:       wave,
		FirstWave:  idx == 0,
	})
	var held *HeldBackError
	if errors.As(err, &held) {
		return failed(held.Error(), map[string]any{"fleetStage": fs.Name, "wave": wave, "freight": c.Freight, "rollout": held.Rollout}), nil
	}
	if err != nil {
		return Result{}, err
	}
	if !ro.Status.Phase.IsFinal() {
		if ro, err = s.store.RequestWave(ctx, ro, wave, c.Promotion); err != nil {
			return Result{}, err
		}
	}
	return waveResult(in, cfg, s.opts, ro, wave), nil
}

// recordsRollback answers a Promotion kargo-fleet made after a rollback so
// that the wave Stage shows the Freight its targets run again: it succeeds
// at once, running no wave. It must name a succeeded rollback of this
// FleetStage to this very Freight, which every wave passed before.
func (s *waveStep) recordsRollback(ctx context.Context, in *Input, wave string) (Result, bool) {
	p := in.Promotion
	if p == nil || p.Annotations[kargo.RollbackAnnotation] != "true" || p.Labels[fleetv1alpha1.WavePromotionLabel] == "" {
		return Result{}, false
	}
	rb, err := s.store.GetRollout(ctx, in.Context.Project, p.Labels[fleetv1alpha1.WavePromotionLabel])
	if err != nil || rb.Spec.Direction != fleetv1alpha1.DirectionRollback || rb.Spec.FleetStage != in.FleetStage.Name ||
		rb.Spec.Freight.Name != in.Context.Freight || rb.Status.Phase != fleetv1alpha1.RolloutSucceeded {
		return Result{}, false
	}
	return succeeded(fmt.Sprintf("wave Stage %s records Freight %s again: FleetRollout %s returned the wave's targets to it",
		in.Context.Stage, shortName(in.Context.Freight), rb.Name),
		map[string]any{"fleetStage": in.FleetStage.Name, "wave": wave, "freight": in.Context.Freight, "rollout": rb.Name}), true
}

// waveResult maps a rollout's status to the wave step's result.
func waveResult(in *Input, cfg WaveConfig, opts stepOptions, ro *fleetv1alpha1.FleetRollout, wave string) Result {
	plan, total := rolloutSummary(ro)
	wp := rolloutWave(ro, wave)
	var counts Counts
	wavePhase := string(fleetv1alpha1.WavePending)
	if wp != nil {
		counts = waveCounts(wp)
		if wp.Phase != "" {
			wavePhase = string(wp.Phase)
		}
	}
	outputs := map[string]any{
		"fleetStage":   in.FleetStage.Name,
		"wave":         wave,
		"freight":      in.Context.Freight,
		"rollout":      ro.Name,
		"rolloutPhase": string(ro.Status.Phase),
		"phase":        wavePhase,
		"counts":       counts,
		"plan":         plan,
		"targets":      rolloutTargets(ro, total),
		"links":        linkVars{in: in, rollout: ro.Name, dashboard: opts.dashboardURL}.links(cfg.Links),
		// summary says what the wave Stage's description says (the Kargo
		// UI shows both): the rollout's phase, the wave's counts and what
		// it waits for.
		"summary": rollout.DescribeWave(rollout.WaveView{Rollout: ro, Wave: wave,
			Dashboard: link.FleetStageURL(opts.dashboardURL, in.Context.Project, in.FleetStage.Name)}).Text,
	}
	if wp != nil {
		switch wp.Phase {
		case fleetv1alpha1.WaveSucceeded:
			return succeeded(fmt.Sprintf("wave %q passed: %d of %d targets succeeded", wave, wp.Succeeded, wp.Total), outputs)
		case fleetv1alpha1.WaveSkipped:
			return succeeded(withDetail(fmt.Sprintf("wave %q skipped", wave), wp.Waiting), outputs)
		case fleetv1alpha1.WaveFailed, fleetv1alpha1.WaveHalted:
			return failed(waveFailure(ro, wp), outputs)
		}
	}
	switch ro.Status.Phase {
	case fleetv1alpha1.RolloutFailed, fleetv1alpha1.RolloutAborted, fleetv1alpha1.RolloutSuperseded:
		return failed(withDetail(fmt.Sprintf("FleetRollout %q %s", ro.Name, strings.ToLower(string(ro.Status.Phase))),
			ro.Status.Message), outputs)
	case fleetv1alpha1.RolloutSucceeded:
		if wp == nil {
			return failed(fmt.Sprintf("wave %q is not part of FleetRollout %q", wave, ro.Name), outputs)
		}
	}
	if cfg.Mode == ModeStart {
		if isPlanned(ro) {
			return succeeded(fmt.Sprintf("wave %q requested: %d targets in the wave, %d in FleetRollout %q",
				wave, counts.Total, rolloutTargets(ro, total), ro.Name), outputs)
		}
		return running(fmt.Sprintf("waiting for the controller to plan FleetRollout %q", ro.Name), outputs)
	}
	return running(waveProgress(in, ro, wp, wave), outputs)
}

// waveProgress describes a wave that is not done.
func waveProgress(in *Input, ro *fleetv1alpha1.FleetRollout, wp *fleetv1alpha1.WaveProgress, wave string) string {
	var msg string
	switch {
	case wp == nil:
		msg = fmt.Sprintf("waiting for the controller to plan wave %q of FleetRollout %q", wave, ro.Name)
	case wp.Phase == fleetv1alpha1.WaveWaitingForApproval:
		msg = fmt.Sprintf("wave %q waits for approval: %s", wave,
			kargo.ApproveCommand(in.Context.Project, in.Context.Freight, in.Context.Stage))
	default:
		phase := wp.Phase
		if phase == "" {
			phase = fleetv1alpha1.WavePending
		}
		msg = fmt.Sprintf("wave %q %s: %d of %d targets succeeded, %d in flight, %d failed, %d pending",
			wave, strings.ToLower(string(phase)), wp.Succeeded, wp.Total, wp.InFlight, wp.Failed, wp.Pending)
		msg = withDetail(msg, wp.Waiting)
	}
	if ro.Status.Phase == fleetv1alpha1.RolloutPaused {
		msg = fmt.Sprintf("FleetRollout %q is paused; %s", ro.Name, msg)
	}
	return msg
}

// waveFailure describes a failed or halted wave, with the main failure
// reasons.
func waveFailure(ro *fleetv1alpha1.FleetRollout, wp *fleetv1alpha1.WaveProgress) string {
	phase := strings.ToLower(string(wp.Phase))
	msg := fmt.Sprintf("wave %q %s: %d of %d targets failed", wp.Name, phase, wp.Failed, wp.Total)
	if breach := meta.FindStatusCondition(ro.Status.Conditions, fleetv1alpha1.ThresholdBreachedCondition); breach != nil &&
		breach.Status == metav1.ConditionTrue {
		// The breach counts as the wave does (the controller restates it
		// with today's counts): say the numbers once.
		if rest, ok := strings.CutPrefix(breach.Message, "wave "+wp.Name+": "); ok {
			msg = fmt.Sprintf("wave %q %s: %s", wp.Name, phase, rest)
		} else {
			msg += "; threshold breached: " + breach.Message
		}
		if wp.InFlight > 0 {
			msg += fmt.Sprintf("; %d target Promotion(s) in flight finish, no new one starts", wp.InFlight)
		}
	} else {
		msg = withDetail(msg, cmp.Or(wp.Waiting, ro.Status.Message))
	}
	if reasons := failureSummary(ro.Status.Failures, 3); reasons != "" {
		msg += " (" + reasons + ")"
	}
	return msg
}

// failureSummary lists up to n failure reasons with their counts and an
// example target each.
func failureSummary(groups []fleetv1alpha1.FailureGroup, n int) string {
	parts := make([]string, 0, n)
	for i := range groups {
		if i == n {
			break
		}
		g := &groups[i]
		part := fmt.Sprintf("%s: %d", g.Reason, g.Count)
		if len(g.Examples) > 0 {
			part += ", e.g. " + g.Examples[0].Name
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, "; ")
}

// waveIndex returns a wave's position in the FleetStage, or -1.
func waveIndex(fs *fleetv1alpha1.FleetStage, wave string) int {
	if wave == "" {
		return -1
	}
	for i := range fs.Spec.Waves {
		if fs.Spec.Waves[i].Name == wave {
			return i
		}
	}
	return -1
}

// waveStageName returns the name of a wave's Stage: as the FleetStage's
// status reports it, else by the <fleetstage>-<wave> convention.
func waveStageName(fs *fleetv1alpha1.FleetStage, wave string) string {
	for _, w := range fs.Status.Waves {
		if w.Name == wave && w.Stage != "" {
			return w.Stage
		}
	}
	return fs.Name + "-" + wave
}

// freightRef returns a reference to a Freight.
func freightRef(f *kargo.Freight) fleetv1alpha1.FreightReference {
	ref := fleetv1alpha1.FreightReference{Name: f.Name}
	if f.Origin.Name != "" {
		ref.Origin = &fleetv1alpha1.FreightOrigin{Kind: f.Origin.Kind, Name: f.Origin.Name}
	}
	return ref
}

// withDetail appends ": detail" when detail is set.
func withDetail(msg, detail string) string {
	if detail == "" {
		return msg
	}
	return msg + ": " + detail
}
