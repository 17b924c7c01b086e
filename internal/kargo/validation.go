package kargo

import "k8s.io/apimachinery/pkg/util/validation/field"

// Messages of Kargo's Stage webhook for promotion-template steps that
// reference a task (Kargo v1.11.2).
const (
	TaskStepIfForbidden     = "PromotionTemplate step referencing a task cannot have an 'if' condition"
	TaskStepConfigForbidden = "PromotionTemplate step referencing a task cannot have a config"
)

// ValidateTaskSteps applies the rule Kargo's Stage webhook applies to a
// promotion template: a step that references a task (task:) may have
// neither an 'if' condition nor a config. path is the steps list's path.
// Code that writes Stages checks them with it before Kargo refuses them.
func ValidateTaskSteps(path *field.Path, steps []PromotionStep) field.ErrorList {
	var errs field.ErrorList
	for i, s := range steps {
		if s.Task == nil {
			continue
		}
		if s.If != "" {
			errs = append(errs, field.Forbidden(path.Index(i).Child("if"), TaskStepIfForbidden))
		}
		if s.Config != nil {
			errs = append(errs, field.Forbidden(path.Index(i).Child("config"), TaskStepConfigForbidden))
		}
	}
	return errs
}
