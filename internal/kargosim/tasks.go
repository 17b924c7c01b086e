package kargosim

import (
	"context"
	"errors"
	"fmt"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// taskGetter fetches the spec of a PromotionTask (in the project) or a
// ClusterPromotionTask.
type taskGetter func(ctx context.Context, namespace string, ref *kargo.PromotionTaskRef) (*kargo.PromotionTaskSpec, error)

// stepAlias is a step's alias: its "as", else step-<n> (task-<n> for a task
// reference), counting from 1.
func stepAlias(step kargo.PromotionStep, i int) string {
	switch {
	case step.As != "":
		return step.As
	case step.Task != nil:
		return fmt.Sprintf("task-%d", i+1)
	default:
		return fmt.Sprintf("step-%d", i+1)
	}
}

// inflateSteps gives every step its alias and expands task references into
// the task's steps, aliased <taskAlias>::<stepAlias>. Each expanded step gets
// the task's vars: defaults unless the Promotion sets the var, and the
// calling step's vars, which must supply every task var without a default.
func inflateSteps(ctx context.Context, get taskGetter, namespace string,
	promoVars []kargo.ExpressionVariable, steps []kargo.PromotionStep) ([]kargo.PromotionStep, error) {
	out := make([]kargo.PromotionStep, 0, len(steps))
	for i, step := range steps {
		alias := stepAlias(step, i)
		if step.Task == nil {
			step.As = alias
			out = append(out, step)
			continue
		}
		spec, err := get(ctx, namespace, step.Task)
		if err != nil {
			return nil, fmt.Errorf("inflate task steps for task %q (%q): %w", step.Task.Name, alias, err)
		}
		vars, err := taskVars(spec.Vars, promoVars, step.Vars)
		if err != nil {
			return nil, fmt.Errorf("inflate task steps for task %q (%q): %w", step.Task.Name, alias, err)
		}
		for j, ts := range spec.Steps {
			ts = *ts.DeepCopy()
			ts.As = alias + aliasSeparator + stepAlias(ts, j)
			ts.Vars = append(append([]kargo.ExpressionVariable{}, vars...), ts.Vars...)
			out = append(out, ts)
		}
	}
	return out, nil
}

// taskVars maps a task's vars onto the vars of its expanded steps.
func taskVars(task, promo, step []kargo.ExpressionVariable) ([]kargo.ExpressionVariable, error) {
	setOn := func(vs []kargo.ExpressionVariable) map[string]bool {
		m := make(map[string]bool, len(vs))
		for _, v := range vs {
			if v.Value != "" {
				m[v.Name] = true
			}
		}
		return m
	}
	inPromo, inStep := setOn(promo), setOn(step)
	var out []kargo.ExpressionVariable
	var errs []error
	for _, v := range task {
		if inPromo[v.Name] {
			continue
		}
		if v.Value != "" {
			out = append(out, v)
			continue
		}
		if !inStep[v.Name] {
			errs = append(errs, fmt.Errorf("missing value for variable %q", v.Name))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return append(out, step...), nil
}
