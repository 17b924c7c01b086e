// Package webhook holds the FleetStage validating webhook. The CRD schema and
// CEL rules reject what they can; this webhook rejects the rest (expr-lang
// expressions, cron schedules, time zones, label selectors, inline promotion
// templates) at admission, with the field path in every message, so a bad
// spec is never stored and then failing in the reconciler.
package webhook

import (
	"context"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/fleetstage/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
	"github.com/kargo-fleet/kargo-fleet/internal/render"
)

// ValidatePath is where the webhook is served.
const ValidatePath = "/validate-fleet-kargo-fleet-io-v1alpha1-fleetstage"

// FleetStageValidator validates FleetStages with the same functions the
// reconciler and the CLI's plan preview use.
type FleetStageValidator struct{}

var _ admission.Validator[*fleetv1alpha1.FleetStage] = FleetStageValidator{}

// SetupWithManager serves the webhook from the manager's webhook server.
func (v FleetStageValidator) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewWebhookManagedBy(mgr, &fleetv1alpha1.FleetStage{}).WithValidator(v).Complete()
}

// ValidateCreate validates a new FleetStage.
func (FleetStageValidator) ValidateCreate(_ context.Context, fs *fleetv1alpha1.FleetStage) (admission.Warnings, error) {
	return nil, Validate(fs)
}

// ValidateUpdate validates a changed FleetStage.
func (FleetStageValidator) ValidateUpdate(_ context.Context, _, fs *fleetv1alpha1.FleetStage) (admission.Warnings, error) {
	if !fs.DeletionTimestamp.IsZero() {
		// Removing the finalizer of a FleetStage being deleted must always work.
		return nil, nil
	}
	return nil, Validate(fs)
}

// ValidateDelete allows every deletion.
func (FleetStageValidator) ValidateDelete(context.Context, *fleetv1alpha1.FleetStage) (admission.Warnings, error) {
	return nil, nil
}

// Validate returns an Invalid API error listing every problem of the spec
// that the CRD schema cannot see, or nil.
func Validate(fs *fleetv1alpha1.FleetStage) error {
	errs := plan.Validate(&fs.Spec)
	if fs.Spec.Stage.Inline != nil {
		if _, err := render.BaseFromInline(fs.Spec.Stage.Inline); err != nil {
			path, detail, _ := strings.Cut(err.Error(), ": ")
			errs = append(errs, field.Invalid(field.NewPath(path), "", detail))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(fleetv1alpha1.GroupVersion.WithKind("FleetStage").GroupKind(), fs.Name, errs)
}
