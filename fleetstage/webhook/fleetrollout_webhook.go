package webhook

import (
	"context"
	"fmt"
	"slices"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetrollout"
	"github.com/kargo-fleet/kargo-fleet/internal/render"
)

// ValidateRolloutPath is where the FleetRollout webhook is served.
const ValidateRolloutPath = "/validate-fleet-kargo-fleet-io-v1alpha1-fleetrollout"

// Kargo's custom verb for putting Freight on a Stage, and where it applies.
const (
	promoteVerb = "promote"
	kargoGroup  = "kargo.akuity.io"
	kargoStages = "stages"
)

// FleetRolloutValidator keeps FleetRollouts from becoming a way around
// Kargo's promote permission. A FleetRollout makes the controller create
// target Promotions with its own rights, so:
//
//   - creating one (Forward or Rollback) is allowed to the controller itself
//     (the step server acts for a Kargo Promotion of a wave Stage, which
//     Kargo authorised) and to users holding Kargo's promote verb on every
//     wave Stage of the FleetStage;
//   - adding or changing a wave request annotation
//     (wave.fleet.kargo-fleet.io/<wave>) needs promote on that wave's Stage;
//   - spec.actor must name the requesting user, "kubernetes:<username>",
//     and may not change afterwards, except in the controller's requests,
//     which carry the actor of the Kargo Promotion they serve.
//
// Pausing, resuming and aborting (spec.intent) need only the fleetrollouts
// patch permission: they never put Freight anywhere new.
type FleetRolloutValidator struct {
	reader     client.Reader
	access     AccessReviewer
	controller string
}

var _ admission.Validator[*fleetv1alpha1.FleetRollout] = (*FleetRolloutValidator)(nil)

// NewFleetRolloutValidator returns a validator that reads FleetStages with
// r, reviews access with a, and trusts the user named controllerUsername
// (the controller's ServiceAccount).
func NewFleetRolloutValidator(r client.Reader, a AccessReviewer, controllerUsername string) *FleetRolloutValidator {
	return &FleetRolloutValidator{reader: r, access: a, controller: controllerUsername}
}

// ValidateCreate validates a new FleetRollout.
func (v *FleetRolloutValidator) ValidateCreate(ctx context.Context, ro *fleetv1alpha1.FleetRollout) (admission.Warnings, error) {
	errs := ValidateRollout(ro)
	if len(errs) > 0 {
		return nil, invalid("FleetRollout", ro.Name, errs)
	}
	user, err := requestUser(ctx)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	if user.Username == v.controller {
		return nil, nil
	}
	if want := Actor(user.Username); ro.Spec.Actor != want {
		errs = append(errs, field.Invalid(field.NewPath("spec", "actor"), ro.Spec.Actor,
			fmt.Sprintf("must be %q, the user creating the FleetRollout", want)))
	}
	fs, fsErrs, err := v.fleetStage(ctx, ro)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	errs = append(errs, fsErrs...)
	if fs != nil {
		waves := make([]string, 0, len(fs.Spec.Waves))
		for i := range fs.Spec.Waves {
			waves = append(waves, fs.Spec.Waves[i].Name)
		}
		denied, err := v.checkPromote(ctx, user, fs, waves)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		for i, wave := range denied {
			denied[i] = render.WaveStageName(fs.Name, wave)
		}
		if len(denied) > 0 {
			errs = append(errs, field.Forbidden(field.NewPath("spec", "fleetStage"), fmt.Sprintf(
				"user %q may not start a %s FleetRollout of FleetStage %q: it needs Kargo's promote permission "+
					"(verb promote on stages.kargo.akuity.io) on every wave Stage, and lacks it on %s",
				user.Username, ro.Spec.Direction, fs.Name, strings.Join(denied, ", "))))
		}
	}
	return nil, invalid("FleetRollout", ro.Name, errs)
}

// ValidateUpdate validates a changed FleetRollout.
func (v *FleetRolloutValidator) ValidateUpdate(
	ctx context.Context, old, ro *fleetv1alpha1.FleetRollout,
) (admission.Warnings, error) {
	requested := changedWaveRequests(old, ro)
	if len(requested) == 0 && old.Spec.Actor == ro.Spec.Actor {
		return nil, nil
	}
	user, err := requestUser(ctx)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	if user.Username == v.controller {
		return nil, nil
	}
	var errs field.ErrorList
	if old.Spec.Actor != ro.Spec.Actor {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "actor"), "may not change after creation"))
	}
	if len(requested) > 0 {
		fs, fsErrs, err := v.fleetStage(ctx, ro)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		errs = append(errs, fsErrs...)
		if fs != nil {
			denied, err := v.checkPromote(ctx, user, fs, requested)
			if err != nil {
				return nil, apierrors.NewInternalError(err)
			}
			for _, wave := range denied {
				p := field.NewPath("metadata", "annotations").Key(fleetrollout.WaveRequestAnnotation(wave))
				errs = append(errs, field.Forbidden(p, fmt.Sprintf(
					"user %q may not request wave %q of FleetStage %q: it needs Kargo's promote permission "+
						"(verb promote on stages.kargo.akuity.io) on wave Stage %q",
					user.Username, wave, fs.Name, render.WaveStageName(fs.Name, wave))))
			}
		}
	}
	return nil, invalid("FleetRollout", ro.Name, errs)
}

// ValidateDelete allows every deletion: it stops a rollout, never starts one.
func (*FleetRolloutValidator) ValidateDelete(context.Context, *fleetv1alpha1.FleetRollout) (admission.Warnings, error) {
	return nil, nil
}

// fleetStage returns the rollout's FleetStage, or a field error when it does
// not exist.
func (v *FleetRolloutValidator) fleetStage(
	ctx context.Context, ro *fleetv1alpha1.FleetRollout,
) (*fleetv1alpha1.FleetStage, field.ErrorList, error) {
	fs := &fleetv1alpha1.FleetStage{}
	err := v.reader.Get(ctx, client.ObjectKey{Namespace: ro.Namespace, Name: ro.Spec.FleetStage}, fs)
	switch {
	case apierrors.IsNotFound(err):
		return nil, field.ErrorList{field.NotFound(field.NewPath("spec", "fleetStage"), ro.Spec.FleetStage)}, nil
	case err != nil:
		return nil, nil, fmt.Errorf("error getting FleetStage %q: %w", ro.Spec.FleetStage, err)
	}
	return fs, nil, nil
}

// checkPromote returns the waves whose wave Stage the user may not promote
// to.
func (v *FleetRolloutValidator) checkPromote(
	ctx context.Context, user authenticationv1.UserInfo, fs *fleetv1alpha1.FleetStage, waves []string,
) ([]string, error) {
	var denied []string
	for _, wave := range waves {
		stage := render.WaveStageName(fs.Name, wave)
		ok, err := v.access.Allowed(ctx, user, authorizationv1.ResourceAttributes{
			Namespace: fs.Namespace, Verb: promoteVerb, Group: kargoGroup, Resource: kargoStages, Name: stage,
		})
		if err != nil {
			return nil, err
		}
		if !ok {
			denied = append(denied, wave)
		}
	}
	return denied, nil
}

// changedWaveRequests returns the waves whose request annotation the update
// adds or changes, sorted.
func changedWaveRequests(old, ro *fleetv1alpha1.FleetRollout) []string {
	before := fleetrollout.WaveRequests(old)
	var out []string
	for wave, promotion := range fleetrollout.WaveRequests(ro) {
		if prev, ok := before[wave]; !ok || prev != promotion {
			out = append(out, wave)
		}
	}
	slices.Sort(out)
	return out
}

// ValidateRollout checks what a FleetRollout's spec must be whoever creates
// it; the CRD's patterns and CEL rules check the same, this gives the CLI,
// the fuzz test and old API servers the same answer.
func ValidateRollout(ro *fleetv1alpha1.FleetRollout) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	for _, msg := range validation.IsDNS1123Label(ro.Spec.FleetStage) {
		errs = append(errs, field.Invalid(spec.Child("fleetStage"), ro.Spec.FleetStage, msg))
	}
	for _, msg := range validation.IsDNS1123Subdomain(ro.Spec.Freight.Name) {
		errs = append(errs, field.Invalid(spec.Child("freight", "name"), ro.Spec.Freight.Name, msg))
	}
	switch ro.Spec.Direction {
	case fleetv1alpha1.DirectionForward:
		if ro.Spec.RollbackOf != "" {
			errs = append(errs, field.Forbidden(spec.Child("rollbackOf"), "only a Rollback rolls back a FleetRollout"))
		}
	case fleetv1alpha1.DirectionRollback:
		for _, msg := range validation.IsDNS1123Subdomain(ro.Spec.RollbackOf) {
			errs = append(errs, field.Invalid(spec.Child("rollbackOf"), ro.Spec.RollbackOf, msg))
		}
		if ro.Spec.RollbackOf != "" && ro.Spec.RollbackOf == ro.Name {
			errs = append(errs, field.Invalid(spec.Child("rollbackOf"), ro.Spec.RollbackOf,
				"a FleetRollout cannot roll back itself"))
		}
	default:
		errs = append(errs, field.NotSupported(spec.Child("direction"), ro.Spec.Direction,
			[]fleetv1alpha1.RolloutDirection{fleetv1alpha1.DirectionForward, fleetv1alpha1.DirectionRollback}))
	}
	return errs
}
