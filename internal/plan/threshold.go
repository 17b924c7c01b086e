package plan

import "fmt"

// Thresholds are the failure allowances that apply while one wave runs.
type Thresholds struct {
	// Wave is the wave's name, for messages.
	Wave string
	// WaveTotal is the number of targets in the wave.
	WaveTotal int
	// WaveMaxFailures is how many of the wave's targets may fail: a number as
	// written, or floor(pct*WaveTotal/100) for a percentage.
	WaveMaxFailures int
	// FleetTotal is the number of targets in every wave of the plan.
	FleetTotal int
	// FleetMaxFailures is the fleet-wide allowance, resolved like
	// WaveMaxFailures against FleetTotal; negative when there is none.
	FleetMaxFailures int
}

// Thresholds returns the thresholds of the wave named wave, and false when
// the plan has no such wave.
func (p *WavePlan) Thresholds(wave string) (Thresholds, bool) {
	w, i := p.Wave(wave)
	if i < 0 {
		return Thresholds{}, false
	}
	th := Thresholds{
		Wave:             w.Name,
		WaveTotal:        len(w.Members),
		WaveMaxFailures:  w.MaxFailures,
		FleetTotal:       p.Members(),
		FleetMaxFailures: -1,
	}
	if p.FleetMaxFailures != nil {
		th.FleetMaxFailures = *p.FleetMaxFailures
	}
	return th, true
}

// FailureCounts are the failures judged so far in one rollout.
type FailureCounts struct {
	// Wave counts failed targets of the running wave.
	Wave int
	// Fleet counts failed targets of every wave of the rollout.
	Fleet int
}

// VerdictDecision says whether a rollout may go on.
type VerdictDecision string

// Verdict decisions.
const (
	// VerdictContinue: no threshold is breached; new targets may start.
	VerdictContinue VerdictDecision = "Continue"
	// VerdictHalt: a threshold is breached; no new target may start.
	VerdictHalt VerdictDecision = "Halt"
)

// HaltReason says which threshold was breached.
type HaltReason string

// Halt reasons.
const (
	// HaltWaveThreshold: the wave's maxFailures was exceeded.
	HaltWaveThreshold HaltReason = "WaveThresholdBreached"
	// HaltFleetThreshold: spec.policy.maxFailures was exceeded.
	HaltFleetThreshold HaltReason = "FleetThresholdBreached"
)

// ThresholdVerdict is the result of judging failures against thresholds.
type ThresholdVerdict struct {
	// Decision is Continue or Halt.
	Decision VerdictDecision
	// Reason is set when Decision is Halt.
	Reason HaltReason
	// Message explains a Halt with the numbers involved.
	Message string
}

// Halted reports whether the verdict halts the rollout.
func (v ThresholdVerdict) Halted() bool {
	return v.Decision == VerdictHalt
}

// Verdict judges failures against thresholds. A threshold is breached when
// failures exceed the allowance (failures > allowed): maxFailures 0 halts on
// the first failure, maxFailures 2 on the third. The wave threshold is judged
// first, so when both are breached the message names the wave.
func Verdict(th Thresholds, failures FailureCounts) ThresholdVerdict {
	if failures.Wave > th.WaveMaxFailures {
		return ThresholdVerdict{
			Decision: VerdictHalt,
			Reason:   HaltWaveThreshold,
			Message: fmt.Sprintf("wave %s: %d of %d targets failed, more than the %d allowed by maxFailures",
				th.Wave, failures.Wave, th.WaveTotal, th.WaveMaxFailures),
		}
	}
	if th.FleetMaxFailures >= 0 && failures.Fleet > th.FleetMaxFailures {
		return ThresholdVerdict{
			Decision: VerdictHalt,
			Reason:   HaltFleetThreshold,
			Message: fmt.Sprintf("fleet: %d of %d targets failed, more than the %d allowed by spec.policy.maxFailures",
				failures.Fleet, th.FleetTotal, th.FleetMaxFailures),
		}
	}
	return ThresholdVerdict{Decision: VerdictContinue}
}
