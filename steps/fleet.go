package steps

import (
	"context"
	"strings"
	"time"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/fleetstage/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// Labels and annotations the steps put on the FleetRollouts they create. The
// rollout controller reads them to learn what the steps asked for.
const (
	// FreightLabel, on a FleetRollout, holds a label-safe form of its Freight's
	// name (see FreightLabelValue), so the steps find the rollout of a
	// (FleetStage, Freight) pair with one label-selected list.
	FreightLabel = "fleet.kargo-fleet.io/freight"
	// WaveRequestAnnotationPrefix prefixes the annotation recording that a
	// Promotion of a wave Stage asks the wave to run:
	// wave.fleet.kargo-fleet.io/<wave>: <promotion name>. The rollout
	// controller refreshes that Promotion when the wave finishes.
	WaveRequestAnnotationPrefix = "wave.fleet.kargo-fleet.io/"
	// ReasonAnnotation, on a rollback FleetRollout, says why it was asked for.
	ReasonAnnotation = "fleet.kargo-fleet.io/reason"
)

// RolloutRequest asks for the rollout of a FleetStage to a Freight.
type RolloutRequest struct {
	// FleetStage is the fleet being promoted.
	FleetStage *fleetv1alpha1.FleetStage
	// Freight is the Freight the fleet moves to.
	Freight fleetv1alpha1.FreightReference
	// Direction is Forward or Rollback.
	Direction fleetv1alpha1.RolloutDirection
	// RollbackOf names the rollout a Rollback undoes.
	RollbackOf string
	// Context is the calling step's context: its key makes the request
	// idempotent, its actor becomes the rollout's actor.
	Context StepContext
	// Reason is recorded on a rollback.
	Reason string
}

// Intents records what a step asks the rollout controller to do. Every method
// is idempotent: calling it again with the same arguments changes nothing.
type Intents interface {
	// EnsureRollout returns the non-final FleetRollout of the FleetStage for
	// the Freight and direction, creating it when there is none. A replay of
	// the request that created a rollout returns that rollout, even when it
	// has become final since.
	EnsureRollout(ctx context.Context, req RolloutRequest) (*fleetv1alpha1.FleetRollout, error)
	// RequestWave records on the rollout that the Promotion asks the wave to
	// run. It writes only when the record is missing or names another
	// Promotion, and returns the rollout as stored.
	RequestWave(ctx context.Context, ro *fleetv1alpha1.FleetRollout, wave, promotion string) (*fleetv1alpha1.FleetRollout, error)
}

// FleetReader reads the state the steps report on. A missing object is a
// Kubernetes NotFound error.
type FleetReader interface {
	// GetRollout returns a FleetRollout.
	GetRollout(ctx context.Context, namespace, name string) (*fleetv1alpha1.FleetRollout, error)
	// GetFreight returns a Freight.
	GetFreight(ctx context.Context, namespace, name string) (*kargo.Freight, error)
}

// Store is what the steps need from the cluster. APIStore implements it on
// the API server.
type Store interface {
	Intents
	FleetReader
}

// WindowStatus says whether a FleetStage's change windows allow changes now.
type WindowStatus struct {
	// Open is true when changes are allowed now.
	Open bool
	// Reason says which window decided, for people.
	Reason string
	// NextOpen is when changes are next allowed, if known and not Open.
	NextOpen time.Time
}

// WindowChecker evaluates a FleetStage's change windows
// (spec.policy.windows) at an instant.
type WindowChecker interface {
	// CheckWindows reports whether changes are allowed at now.
	CheckWindows(fs *fleetv1alpha1.FleetStage, now time.Time) (WindowStatus, error)
}

// WaveRequestAnnotation returns the annotation key recording a wave request.
func WaveRequestAnnotation(wave string) string { return WaveRequestAnnotationPrefix + wave }

// WaveRequests returns the wave requests recorded on a rollout: wave name to
// the name of the Promotion that asked for it.
func WaveRequests(ro *fleetv1alpha1.FleetRollout) map[string]string {
	out := map[string]string{}
	for k, v := range ro.Annotations {
		if wave, ok := strings.CutPrefix(k, WaveRequestAnnotationPrefix); ok && wave != "" {
			out[wave] = v
		}
	}
	return out
}

// ParseStepKey splits the value of the StepKeyAnnotation into the Promotion
// and the step alias that created a rollout.
func ParseStepKey(value string) (promotion, alias string, ok bool) {
	return strings.Cut(value, "/")
}

// rolloutWave returns the progress of a wave in a rollout, or nil.
func rolloutWave(ro *fleetv1alpha1.FleetRollout, wave string) *fleetv1alpha1.WaveProgress {
	for i := range ro.Status.Waves {
		if ro.Status.Waves[i].Name == wave {
			return &ro.Status.Waves[i]
		}
	}
	return nil
}

// isPlanned reports whether the rollout controller has planned the rollout.
func isPlanned(ro *fleetv1alpha1.FleetRollout) bool {
	return ro.Status.Snapshot != nil || len(ro.Status.Waves) > 0 || ro.Status.Phase.IsFinal()
}
