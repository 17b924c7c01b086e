package kargo

import (
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

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

// FreightNotAvailable is the message of Kargo's Promotion webhook when the
// Freight is not (yet) available to the Stage: neither verified upstream
// of it nor approved for it. Kargo marks Freight verified upstream ~100-150
// ms after the upstream Promotion succeeded, so a caller that just saw it
// succeed retries on this refusal.
const FreightNotAvailable = "Freight is not available to this Stage"

// IsFreightNotAvailable tells whether err is Kargo's refusal of a
// Promotion whose Freight is not available to its Stage: an Invalid error
// of the API server carrying FreightNotAvailable. Kargo gives no reason
// code of its own, so the message is the only mark.
func IsFreightNotAvailable(err error) bool {
	return apierrors.IsInvalid(err) && strings.Contains(err.Error(), FreightNotAvailable)
}
