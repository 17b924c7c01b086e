package steps

import (
	"context"
	"time"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
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
	// AnyFreight is recorded on a rollback whose Freight may be held back
	// or not have passed the fleet.
	AnyFreight bool
	// Attempt is the rollback attempt rollout.PlanRollback decided on
	// (RollbackPlan.Attempt).
	Attempt int
	// Wave, for a forward rollout, is the wave the calling Promotion asks
	// to run: a rollout created by the call records the request in the
	// same write.
	Wave string
	// FirstWave says Wave is the FleetStage's first wave: only a Promotion
	// of the first wave Stage starts a new rollout. A later wave's Stage
	// promoted again after the rollout finished (a second Promotion of the
	// same Freight, e.g. Kargo's auto-promotion next to kargo-fleet's own)
	// gets the finished rollout's outcome.
	FirstWave bool
}

// Intents records what a step asks the rollout controller to do. Every method
// is idempotent: calling it again with the same arguments changes nothing.
type Intents interface {
	// EnsureRollout returns the non-final forward FleetRollout of the
	// FleetStage for the Freight, creating it when there is none. A replay
	// of the request that created a rollout returns that rollout, even when
	// it has become final since.
	EnsureRollout(ctx context.Context, req RolloutRequest) (*fleetv1alpha1.FleetRollout, error)
	// EnsureRollback returns rollback attempt req.Attempt of
	// req.RollbackOf, creating it when it does not exist yet: whoever asks
	// for an attempt gets the one object. Whether there is a new attempt
	// is rollout.PlanRollback's decision, not the store's. An existing
	// attempt to other Freight than asked is a *fleetrollout.ConflictError.
	EnsureRollback(ctx context.Context, req RolloutRequest) (*fleetv1alpha1.FleetRollout, error)
	// RequestWave records on the rollout that the Promotion asks the wave to
	// run. It writes only when the record is missing or names another
	// Promotion, and returns the rollout as stored.
	RequestWave(ctx context.Context, ro *fleetv1alpha1.FleetRollout, wave, promotion string) (*fleetv1alpha1.FleetRollout, error)
	// ResumeWave resumes a paused rollout for a person's Promotion of its
	// Freight into the wave Stage where it stopped: in one write, the
	// rollout's intent becomes Run, the person is recorded as who set it,
	// and the Promotion becomes the wave's request.
	ResumeWave(ctx context.Context, ro *fleetv1alpha1.FleetRollout, wave, promotion, actor string) (*fleetv1alpha1.FleetRollout, error)
}

// FleetReader reads the state the steps report on. A missing object is a
// Kubernetes NotFound error.
type FleetReader interface {
	// GetRollout returns a FleetRollout.
	GetRollout(ctx context.Context, namespace, name string) (*fleetv1alpha1.FleetRollout, error)
	// GetFreight returns a Freight.
	GetFreight(ctx context.Context, namespace, name string) (*kargo.Freight, error)
	// GetFreightApprovals returns a Freight for its approvals
	// (status.approvedFor); the Stages it is in and verified in may be
	// missing. Gates read it on every poll of every target.
	GetFreightApprovals(ctx context.Context, namespace, name string) (*kargo.Freight, error)
	// RolloutRecords returns the FleetStage's rollouts and, when named is
	// not among them, the rollout of that name if it exists: what
	// rollout.PlanRollback decides on.
	RolloutRecords(ctx context.Context, fs *fleetv1alpha1.FleetStage, named string) ([]*fleetv1alpha1.FleetRollout, error)
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
