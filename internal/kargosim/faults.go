package kargosim

import (
	"encoding/binary"
	"hash/fnv"
	"strconv"
	"time"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// Fault-injection knobs. Each is read from the target Stage: first from its
// spec.vars (FaultVar, ...), then from its labels (FaultLabel, ...). They
// drive simulated step kinds (anything but http and compose-output) and the
// Stage's simulated health and verification.
const (
	// FaultVar / FaultLabel pick what goes wrong; one of the Fault* values.
	FaultVar   = "simFault"
	FaultLabel = "sim.kargo-fleet.io/fault"
	// DelayVar / DelayLabel is how long each simulated step stays Running
	// before its outcome (a Go duration, e.g. "2s"; default 0).
	DelayVar   = "simDelay"
	DelayLabel = "sim.kargo-fleet.io/delay"
	// FailureRateVar / FailureRateLabel is the probability (0 to 1) that a
	// simulated step fails. The draw is seeded (Options.Seed) and fixed per
	// Promotion and step alias, so a re-run gives the same outcome.
	FailureRateVar   = "simFailureRate"
	FailureRateLabel = "sim.kargo-fleet.io/failure-rate"
	// FaultStepVar / FaultStepLabel limits FaultFail, FaultError and
	// FaultHang to the step with this alias (default: every simulated step).
	FaultStepVar   = "simFaultStep"
	FaultStepLabel = "sim.kargo-fleet.io/fault-step"
)

// Fault values for FaultVar / FaultLabel.
const (
	// FaultNone: simulated steps succeed (after the delay).
	FaultNone = "none"
	// FaultFail: a simulated step fails (step and Promotion Failed).
	FaultFail = "fail"
	// FaultError: a simulated step errors (Errored, counted against its
	// errorThreshold like any error).
	FaultError = "error"
	// FaultHang: a simulated step never finishes; only its retry.timeout
	// (or the kind's default, 5m for argocd-update) or an abort ends it.
	FaultHang = "hang"
	// FaultUnhealthy: the Promotion succeeds but the Stage turns Unhealthy,
	// so its Freight is never verified there.
	FaultUnhealthy = "unhealthy"
	// FaultFailVerification: the Promotion succeeds and the Stage is
	// Healthy, but verification fails (Verified=False, no verifiedIn).
	FaultFailVerification = "fail-verification"
)

// faults are one Stage's fault-injection settings.
type faults struct {
	fault       string
	delay       time.Duration
	failureRate float64
	step        string
}

// stageFaults reads the knobs from the Stage's vars, then its labels.
func stageFaults(stage *kargo.Stage) faults {
	get := func(v, l string) string {
		for _, sv := range stage.Spec.Vars {
			if sv.Name == v {
				return sv.Value
			}
		}
		return stage.Labels[l]
	}
	f := faults{fault: get(FaultVar, FaultLabel), step: get(FaultStepVar, FaultStepLabel)}
	if f.fault == "" {
		f.fault = FaultNone
	}
	if d, err := time.ParseDuration(get(DelayVar, DelayLabel)); err == nil && d > 0 {
		f.delay = d
	}
	if r, err := strconv.ParseFloat(get(FailureRateVar, FailureRateLabel), 64); err == nil {
		f.failureRate = min(max(r, 0), 1)
	}
	return f
}

// draw is a number in [0, 1) fixed by the seed, the Promotion and the step.
func draw(seed int64, promotion, alias string) float64 {
	h := fnv.New64a()
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(seed))
	_, _ = h.Write(b[:])
	_, _ = h.Write([]byte(promotion))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(alias))
	return float64(h.Sum64()>>11) / float64(1<<53)
}
