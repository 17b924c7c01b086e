package kargosim

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/expr-lang/expr"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// aliasSeparator joins a task step's alias to its task's alias.
const aliasSeparator = "::"

// dataReader reads the Secrets and ConfigMaps of a project for the secret()
// and configMap() expression functions. A missing object reads as empty.
type dataReader interface {
	secretData(ctx context.Context, namespace, name string) (map[string]string, error)
	configMapData(ctx context.Context, namespace, name string) (map[string]string, error)
}

// promoContext is what the step engine knows about one Promotion run.
type promoContext struct {
	project      string
	stage        string
	promotion    string
	actor        string
	rollback     bool
	freight      kargo.FreightReference
	freightAlias string
	vars         []kargo.ExpressionVariable
	// metas and state are the Promotion's stepExecutionMetadata and state;
	// the engine updates them in place.
	metas []kargo.StepExecutionMetadata
	state map[string]any
	data  dataReader
	// faults are the fault-injection knobs of the target Stage.
	faults faults
}

// ctxMap is the "ctx" variable of expressions.
func (p *promoContext) ctxMap(alias string) map[string]any {
	return map[string]any{
		"ctx": map[string]any{
			"project":   p.project,
			"stage":     p.stage,
			"promotion": p.promotion,
			"targetFreight": map[string]any{
				"name":   p.freight.Name,
				"alias":  p.freightAlias,
				"origin": map[string]any{"name": p.freight.Origin.Name},
			},
			"meta": map[string]any{
				"promotion": map[string]any{"actor": p.actor, "rollback": p.rollback},
				"step":      map[string]any{"alias": alias},
			},
		},
	}
}

// env builds an expression environment for the step: ctx, vars and, for
// everything but Promotion-level vars, outputs, task.outputs and stepMetas.
func (p *promoContext) env(alias string, vars map[string]any, withOutputs bool) map[string]any {
	env := p.ctxMap(alias)
	env["vars"] = vars
	if withOutputs {
		env["outputs"] = p.state
		metas := make(map[string]any, len(p.metas))
		for _, m := range p.metas {
			metas[m.Alias] = m
		}
		env["stepMetas"] = metas
		if task := taskOutputs(alias, p.state); task != nil {
			env["task"] = map[string]any{"outputs": task}
		}
	}
	return env
}

// taskOutputs gathers the outputs of the steps of the task the alias belongs
// to, keyed by their short alias.
func taskOutputs(alias string, state map[string]any) map[string]any {
	ns := aliasNamespace(alias)
	if ns == "" {
		return nil
	}
	out := map[string]any{}
	for k, v := range state {
		if aliasNamespace(k) == ns {
			out[k[len(ns)+len(aliasSeparator):]] = v
		}
	}
	return out
}

func aliasNamespace(alias string) string {
	parts := strings.Split(alias, aliasSeparator)
	if len(parts) != 2 {
		return ""
	}
	return parts[0]
}

// dataFuncs are secret() and configMap() over the project.
func (p *promoContext) dataFuncs(ctx context.Context) []expr.Option {
	read := func(get func(context.Context, string, string) (map[string]string, error)) func(...any) (any, error) {
		return func(args ...any) (any, error) {
			if len(args) != 1 {
				return nil, fmt.Errorf("expected 1 argument, got %d", len(args))
			}
			name, ok := args[0].(string)
			if !ok {
				return nil, fmt.Errorf("argument must be string, got %T", args[0])
			}
			if p.data == nil {
				return map[string]string{}, nil
			}
			return get(ctx, p.project, name)
		}
	}
	var secret, configMap func(context.Context, string, string) (map[string]string, error)
	if p.data != nil {
		secret, configMap = p.data.secretData, p.data.configMapData
	}
	return []expr.Option{
		expr.Function("secret", read(secret), new(func(string) map[string]string)),
		expr.Function("configMap", read(configMap), new(func(string) map[string]string)),
	}
}

// statusFuncs are success(), failure(), always() and status(alias) as seen
// by the step with the given alias.
func (p *promoContext) statusFuncs(alias string) []expr.Option {
	metas := p.metas
	ns := aliasNamespace(alias)
	return []expr.Option{
		expr.Function("success", func(...any) (any, error) { return !hasFailures(metas), nil }, new(func() bool)),
		expr.Function("failure", func(...any) (any, error) { return hasFailures(metas), nil }, new(func() bool)),
		expr.Function("always", func(...any) (any, error) { return true, nil }, new(func() bool)),
		expr.Function("status", func(args ...any) (any, error) {
			want, ok := args[0].(string)
			if !ok || want == "" {
				return "", fmt.Errorf("status() needs a step alias")
			}
			for _, m := range metas {
				short, mns := m.Alias, ""
				if parts := strings.Split(m.Alias, aliasSeparator); len(parts) == 2 {
					mns, short = parts[0], parts[1]
				}
				if mns == ns && short == want {
					return m.Status, nil
				}
			}
			return "", nil
		}, new(func(string) string)),
	}
}

// hasFailures reports whether a step that does not continue on error
// failed or errored.
func hasFailures(metas []kargo.StepExecutionMetadata) bool {
	for _, m := range metas {
		if m.ContinueOnError {
			continue
		}
		if m.Status == kargo.StepErrored || m.Status == kargo.StepFailed {
			return true
		}
	}
	return false
}

// stepVars evaluates the Promotion's vars, then the step's own, in order;
// each may use the ones before it.
func (p *promoContext) stepVars(ctx context.Context, step kargo.PromotionStep) (map[string]any, error) {
	vars := map[string]any{}
	opts := p.dataFuncs(ctx)
	for _, v := range p.vars {
		val, err := evaluateTemplate(v.Value, p.env(step.As, vars, false), opts...)
		if err != nil {
			return nil, fmt.Errorf("error pre-processing promotion variable %q: %w", v.Name, err)
		}
		vars[v.Name] = val
	}
	for _, v := range step.Vars {
		val, err := evaluateTemplate(v.Value, p.env(step.As, maps.Clone(vars), true), opts...)
		if err != nil {
			return nil, fmt.Errorf("error pre-processing promotion variable %q: %w", v.Name, err)
		}
		vars[v.Name] = val
	}
	return vars, nil
}

// shouldSkip evaluates the step's "if" (default: skip once a step failed).
func (p *promoContext) shouldSkip(ctx context.Context, step kargo.PromotionStep) (bool, error) {
	if step.If == "" {
		return hasFailures(p.metas), nil
	}
	vars, err := p.stepVars(ctx, step)
	if err != nil {
		return false, err
	}
	opts := append(p.dataFuncs(ctx), p.statusFuncs(step.As)...)
	v, err := evaluateTemplate(step.If, p.env(step.As, vars, true), opts...)
	if err != nil {
		return false, err
	}
	b, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("expression must evaluate to a boolean, got %T", v)
	}
	return !b, nil
}

// stepConfig evaluates the step's config templates.
func (p *promoContext) stepConfig(ctx context.Context, step kargo.PromotionStep) (map[string]any, error) {
	if step.Config == nil || len(step.Config.Raw) == 0 {
		return map[string]any{}, nil
	}
	vars, err := p.stepVars(ctx, step)
	if err != nil {
		return nil, err
	}
	opts := append(p.dataFuncs(ctx), p.statusFuncs(step.As)...)
	return evaluateJSONTemplate(step.Config.Raw, p.env(step.As, vars, true), opts...)
}

// stepTimeout is the step's retry.timeout, else the kind's default.
func stepTimeout(step kargo.PromotionStep, def time.Duration) time.Duration {
	if step.Retry != nil && step.Retry.Timeout != nil {
		return step.Retry.Timeout.Duration
	}
	return def
}

// errorThreshold is the step's retry.errorThreshold, else 1.
func errorThreshold(step kargo.PromotionStep) uint32 {
	if step.Retry == nil || step.Retry.ErrorThreshold == 0 {
		return 1
	}
	return step.Retry.ErrorThreshold
}
