package steps

import (
	"context"
	"encoding/json"
	"errors"
	"slices"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/utils/clock"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetrollout"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/personrights"
)

// Step names, as used in /v1/steps/<name>, in ClusterPromotionTask names and
// in `kargo-fleet step <name>`.
const (
	// WaveStepName runs one wave of a fleet rollout.
	WaveStepName = "fleet-wave"
	// RollbackStepName returns the fleet to its last good Freight.
	RollbackStepName = "fleet-rollback"
	// GateStepName waits for a change window, an approval or a condition.
	GateStepName = "fleet-gate"
	// StatusStepName reports the fleet's counts and version distribution.
	StatusStepName = "fleet-status"
)

// State is where a step stands.
type State string

// Step states.
const (
	// StateRunning means the step is not done: call it again later.
	StateRunning State = "Running"
	// StateSucceeded means the step is done and passed.
	StateSucceeded State = "Succeeded"
	// StateFailed means the step is done and failed; the message says why.
	StateFailed State = "Failed"
)

// IsFinal reports whether the state will not change on a later call.
func (s State) IsFinal() bool { return s == StateSucceeded || s == StateFailed }

// Result is what a step returns.
type Result struct {
	// State is Running, Succeeded or Failed.
	State State `json:"state"`
	// Message says, for people, what the step did or waits for.
	Message string `json:"message,omitempty"`
	// Outputs are the step's outputs; Kargo exposes them under the step's
	// alias. They always hold "links" (possibly empty) so Kargo's UI can show
	// them.
	Outputs map[string]any `json:"outputs"`
}

// Link is a URL Kargo's UI shows among a step's outputs.
type Link struct {
	// URL is an http(s) URL.
	URL string `json:"url"`
	// Label is the text shown for the link.
	Label string `json:"label"`
}

// StepContext is the Kargo context of the Promotion that calls a step.
type StepContext struct {
	// Project is the Kargo Project (namespace).
	Project string
	// Stage is the Stage being promoted.
	Stage string
	// Promotion is the calling Promotion's name.
	Promotion string
	// Freight is the name of the Freight being promoted.
	Freight string
	// Alias is the step's alias in the Promotion; inside a task it is
	// <task alias>::<step alias>.
	Alias string
	// Actor is who started the Promotion: its kargo.akuity.io/create-actor
	// annotation, written by Kargo's webhook; empty when Kargo named nobody
	// (auto-promotions), which the store records as
	// fleetrollout.UnknownActor.
	Actor string
	// Rollback is true when the Promotion is marked as a rollback.
	Rollback bool
	// UIBaseURL is the base URL of Kargo's UI, when Kargo knows it.
	UIBaseURL string
}

// Key returns the idempotency key of a step request: promotion and alias.
func (c StepContext) Key() string { return fleetrollout.StepKey(c.Promotion, c.Alias) }

// Input is everything a step runs on. The server fills it after it has
// authenticated the request and checked the Promotion, so a step can rely on
// FleetStage and Stage being the ones the Promotion belongs to.
type Input struct {
	// Context is the Kargo context.
	Context StepContext
	// FleetStage is the FleetStage the calling Stage belongs to.
	FleetStage *fleetv1alpha1.FleetStage
	// Stage is the calling Stage.
	Stage *kargo.Stage
	// Promotion is the calling Promotion.
	Promotion *kargo.Promotion
	// Config is the step's raw JSON config; nil means {}.
	Config json.RawMessage
}

// Wave returns the wave of the calling Stage, or "" when it is not a wave or
// target Stage.
func (in *Input) Wave() string { return in.Stage.Labels[fleetv1alpha1.WaveLabel] }

// Step is one fleet step.
type Step interface {
	// Name is the step's name.
	Name() string
	// Run validates the config and runs the step. A TerminalError means the
	// step Failed for good (bad config); any other error is transient.
	Run(ctx context.Context, in *Input) (Result, error)
}

// TerminalError is an error that makes a step Failed for good, such as an
// invalid config: calling the step again cannot change the outcome.
type TerminalError struct {
	// Err is the cause.
	Err error
}

// Error implements error.
func (e *TerminalError) Error() string { return e.Err.Error() }

// Unwrap returns the cause.
func (e *TerminalError) Unwrap() error { return e.Err }

// IsTerminal reports whether err is, or wraps, a TerminalError.
func IsTerminal(err error) bool {
	var t *TerminalError
	return errors.As(err, &t)
}

// Registry maps step names to steps.
type Registry map[string]Step

// NewRegistry returns a registry of the given steps.
func NewRegistry(steps ...Step) Registry {
	r := make(Registry, len(steps))
	for _, s := range steps {
		r[s.Name()] = s
	}
	return r
}

// DefaultSteps returns every fleet step, backed by store.
func DefaultSteps(store Store, windows WindowChecker, clk clock.PassiveClock, opts ...Option) Registry {
	return NewRegistry(
		NewWaveStep(store, opts...),
		NewRollbackStep(store, opts...),
		NewGateStep(store, windows, clk, opts...),
		NewStatusStep(store, opts...),
	)
}

// Option configures a step.
type Option func(*stepOptions)

// stepOptions is what every step may be configured with.
type stepOptions struct {
	// dashboardURL is the fleet dashboard's base URL; "" for none.
	dashboardURL string
	// rights checks the rights of the person behind a Kargo UI gesture;
	// nil refuses every gesture's fleet action.
	rights PersonRights
}

// PersonRights checks whether the person behind a Kargo UI gesture holds
// rights (personrights.Checker).
type PersonRights interface {
	Check(ctx context.Context, p personrights.Person, namespace string, rights []authorizationv1.ResourceAttributes) (personrights.Verdict, error)
}

// WithPersonRights makes fleet-wave carry out the fleet actions a person's
// Promotion into a wave Stage means (resume, rollback: docs/kargo-ui.md)
// when c says the person holds their rights.
func WithPersonRights(c PersonRights) Option {
	return func(o *stepOptions) { o.rights = c }
}

// WithDashboardURL makes the steps' outputs link to the FleetStage's page
// of the fleet dashboard served at base. Without it, or with a base that
// is not an http(s) URL, they show no dashboard link rather than a dead one.
func WithDashboardURL(base string) Option {
	return func(o *stepOptions) { o.dashboardURL = base }
}

func optionsOf(opts []Option) stepOptions {
	var o stepOptions
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// Names returns the registered step names, sorted.
func (r Registry) Names() []string {
	names := make([]string, 0, len(r))
	for n := range r {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// running, succeeded and failed build results.
func running(msg string, outputs map[string]any) Result {
	return Result{State: StateRunning, Message: msg, Outputs: WithLinks(outputs)}
}

func succeeded(msg string, outputs map[string]any) Result {
	return Result{State: StateSucceeded, Message: msg, Outputs: WithLinks(outputs)}
}

func failed(msg string, outputs map[string]any) Result {
	return Result{State: StateFailed, Message: msg, Outputs: WithLinks(outputs)}
}

// WithLinks returns outputs, created when nil, holding a "links" list (empty
// when it had none): Kargo's UI and the shipped tasks read outputs.links of
// every answer, whatever the step's state.
func WithLinks(outputs map[string]any) map[string]any {
	if outputs == nil {
		outputs = map[string]any{}
	}
	if _, ok := outputs["links"]; !ok {
		outputs["links"] = []Link{}
	}
	return outputs
}
