package steps

import (
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
)

// maxCachedPolicies bounds the compiled-policy cache of PlanWindows.
const maxCachedPolicies = 1024

// PlanWindows is the WindowChecker of the server: it evaluates a FleetStage's
// change windows with internal/plan, the code the rollout controller
// schedules targets with. A gate is not about one target, so it sees the
// windows as a target without labels does: windows without a selector
// apply. Each FleetStage generation's policy is compiled once.
type PlanWindows struct {
	mu       sync.Mutex
	policies map[types.UID]compiledPolicy
}

// compiledPolicy is one FleetStage generation's compiled policy.
type compiledPolicy struct {
	generation int64
	policy     *plan.CompiledPolicy
}

var _ WindowChecker = (*PlanWindows)(nil)

// NewPlanWindows returns a PlanWindows.
func NewPlanWindows() *PlanWindows {
	return &PlanWindows{policies: map[types.UID]compiledPolicy{}}
}

// CheckWindows implements WindowChecker. An invalid policy is a
// TerminalError naming the field.
func (w *PlanWindows) CheckWindows(fs *fleetv1alpha1.FleetStage, now time.Time) (WindowStatus, error) {
	if len(fs.Spec.Policy.Windows) == 0 {
		return WindowStatus{Open: true, Reason: "no change windows"}, nil
	}
	policy, err := w.compile(fs)
	if err != nil {
		return WindowStatus{}, err
	}
	next, ok := policy.NextAllowed(&plan.Target{}, now)
	switch {
	case !ok:
		return WindowStatus{Reason: fmt.Sprintf("no change window of FleetStage %q opens in the foreseeable future", fs.Name)}, nil
	case !next.After(now):
		return WindowStatus{Open: true, Reason: "inside the change windows"}, nil
	default:
		return WindowStatus{Reason: fmt.Sprintf("outside the change windows of FleetStage %q", fs.Name), NextOpen: next}, nil
	}
}

// compile returns the FleetStage's compiled policy, compiling it once per
// generation.
func (w *PlanWindows) compile(fs *fleetv1alpha1.FleetStage) (*plan.CompiledPolicy, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if c, ok := w.policies[fs.UID]; ok && fs.UID != "" && c.generation == fs.Generation {
		return c.policy, nil
	}
	policy, errs := plan.CompilePolicy(&fs.Spec.Policy, field.NewPath("spec", "policy"))
	if len(errs) > 0 {
		return nil, &TerminalError{Err: fmt.Errorf("invalid change windows of FleetStage %q: %w", fs.Name, errs.ToAggregate())}
	}
	if len(w.policies) >= maxCachedPolicies {
		clear(w.policies)
	}
	if fs.UID != "" {
		w.policies[fs.UID] = compiledPolicy{generation: fs.Generation, policy: policy}
	}
	return policy, nil
}
