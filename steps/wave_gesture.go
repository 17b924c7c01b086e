package steps

import (
	"context"
	"fmt"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/personrights"
	"github.com/kargo-fleet/kargo-fleet/internal/rollout"
)

// gesture carries out the fleet action a person's Promotion of this wave
// Stage means (docs/kargo-ui.md, "Fleet actions from the Kargo UI"):
// Promote of a paused rollout's Freight into the wave Stage where it
// stopped resumes it; Promote of the Freight a rollback would return to
// into the first wave Stage rolls the fleet back. The person must hold the
// rights `kargo-fleet resume` and `kargo-fleet rollback` need, checked as
// them: the admission guard refuses the Promotion otherwise, and this
// check holds where the guard is off. ok is false when the Promotion means
// no fleet action: the wave runs as for any Promotion.
func (s *waveStep) gesture(ctx context.Context, in *Input, wave string) (res Result, ok bool, err error) {
	fs, c, p := in.FleetStage, in.Context, in.Promotion
	if p == nil {
		return Result{}, false, nil
	}
	rollouts, err := s.store.RolloutRecords(ctx, fs, "")
	if err != nil {
		return Result{}, false, err
	}
	if rb := rollout.RollbackStartedBy(rollouts, p.Name); rb != nil {
		// Kargo runs the step again while the rollback this Promotion
		// started goes on (it waits for it): report the rollback, as the
		// first call did, and start nothing else.
		step := &rollbackStep{store: s.store, opts: s.opts}
		res, err := step.run(ctx, in, RollbackConfig{Mode: ModeWait, RollbackOf: rb.Spec.RollbackOf, Freight: c.Freight})
		return res, true, err
	}
	req, ok := rollout.GestureRequest(fs, rollouts, rollout.StageWave, rollout.GesturePromoteWaveStage, p)
	if !ok {
		return Result{}, false, nil
	}
	reading := rollout.ReadKargoUIGesture(req)
	if reading.Action == rollout.ActionNone {
		return Result{}, false, nil
	}
	actor := p.Annotations[kargo.CreateActorAnnotation]
	person := personrights.Person{Actor: actor}
	outputs := map[string]any{"fleetStage": fs.Name, "wave": wave, "freight": c.Freight, "rollout": reading.Rollout,
		"action": string(reading.Action)}
	if personrights.CheckedAtAdmission(actor) {
		return s.carryOut(ctx, in, wave, reading, rollouts, person)
	}
	if s.opts.rights == nil {
		return failed(fmt.Sprintf("Promote of Freight %s into wave Stage %s would %s fleet %q, but this step server checks "+
			"nobody's rights", shortName(c.Freight), c.Stage, reading.Action.Verb(), fs.Name), outputs), true, nil
	}
	v, err := s.opts.rights.Check(ctx, person, c.Project, reading.Rights(c.Project, fs))
	if err != nil {
		return Result{}, false, err
	}
	if !v.Allowed {
		return failed(fmt.Sprintf("Promote of Freight %s into wave Stage %s would %s fleet %q (FleetRollout %s), and %s",
			shortName(c.Freight), c.Stage, reading.Action.Verb(), fs.Name, reading.Rollout,
			v.Describe(person.Name())), outputs), true, nil
	}
	return s.carryOut(ctx, in, wave, reading, rollouts, person)
}

// carryOut resumes the rollout or rolls the fleet back for the person.
func (s *waveStep) carryOut(ctx context.Context, in *Input, wave string, reading rollout.KargoUIReading,
	rollouts []*fleetv1alpha1.FleetRollout, person personrights.Person) (Result, bool, error) {
	c := in.Context
	switch reading.Action {
	case rollout.ActionResume:
		ro := findRollout(rollouts, reading.Rollout)
		if ro == nil {
			return Result{}, false, fmt.Errorf("FleetRollout %q vanished", reading.Rollout)
		}
		ro, err := s.store.ResumeWave(ctx, ro, wave, c.Promotion, person.Name())
		if err != nil {
			return Result{}, false, err
		}
		return waveResult(in, WaveConfig{}, s.opts, ro, wave), true, nil
	case rollout.ActionRollback:
		step := &rollbackStep{store: s.store, opts: s.opts}
		cfg := RollbackConfig{Mode: ModeWait, RollbackOf: reading.Rollout, Freight: c.Freight,
			Reason: fmt.Sprintf("Promote of Freight %s into wave Stage %s by %s", shortName(c.Freight), c.Stage, person.Name())}
		res, err := step.run(ctx, in, cfg)
		return res, true, err
	}
	return Result{}, false, nil
}

func findRollout(rollouts []*fleetv1alpha1.FleetRollout, name string) *fleetv1alpha1.FleetRollout {
	for _, ro := range rollouts {
		if ro.Name == name {
			return ro
		}
	}
	return nil
}
