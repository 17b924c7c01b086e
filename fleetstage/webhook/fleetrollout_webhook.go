package webhook

import (
	"cmp"
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
	fleetrule "github.com/kargo-fleet/kargo-fleet/internal/rollout"
	"github.com/kargo-fleet/kargo-fleet/internal/rolloutstore"
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
//     which carry the actor of the Kargo Promotion they serve;
//   - changing spec.intent (pausing, resuming, aborting) and deleting an
//     unfinished rollout (which aborts it) need promote on every wave Stage,
//     like starting one: the fleetrollouts patch and delete permissions,
//     which Kubernetes' edit role may carry, are not enough to stop a fleet;
//   - spec.rollbackOf names a forward rollout of the same FleetStage and
//     never changes; a rollback a user creates returns the fleet only to
//     Freight that passed it and is not held back.
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
	rollbackErrs, err := v.checkRollbackOf(ctx, ro)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	errs = append(errs, rollbackErrs...)
	fs, fsErrs, err := v.fleetStage(ctx, ro)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	if fs != nil {
		if rec := fleetrollout.Deleted(fs, ro.Name); rec != nil {
			// A deleted rollout is aborted for good: the Promotion whose step
			// created it must not start it again under the same name.
			errs = append(errs, field.Forbidden(field.NewPath("metadata", "name"), fmt.Sprintf(
				"FleetRollout %q of FleetStage %q existed before and is gone (recorded as %s in the FleetStage's history); "+
					"a rollout is not started again under the same name", ro.Name, fs.Name, rec.Phase)))
		}
	}
	user, err := requestUser(ctx)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	if user.Username == v.controller {
		return nil, invalid("FleetRollout", ro.Name, errs)
	}
	if want := Actor(user.Username); ro.Spec.Actor != want {
		errs = append(errs, field.Invalid(field.NewPath("spec", "actor"), ro.Spec.Actor,
			fmt.Sprintf("must be %q, the user creating the FleetRollout", want)))
	}
	errs = append(errs, fsErrs...)
	if fs != nil {
		denied, err := v.checkPromote(ctx, user, fs, waveNames(fs))
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		if len(denied) > 0 {
			errs = append(errs, field.Forbidden(field.NewPath("spec", "fleetStage"), fmt.Sprintf(
				"user %q may not start a %s FleetRollout of FleetStage %q: it needs Kargo's promote permission "+
					"(verb promote on stages.kargo.akuity.io) on every wave Stage, and lacks it on %s",
				user.Username, ro.Spec.Direction, fs.Name, strings.Join(waveStages(fs.Name, denied), ", "))))
		}
		if ro.Spec.Direction == fleetv1alpha1.DirectionRollback && len(rollbackErrs) == 0 {
			freightErrs, err := v.checkRollbackFreight(ctx, fs, ro)
			if err != nil {
				return nil, apierrors.NewInternalError(err)
			}
			errs = append(errs, freightErrs...)
		}
	}
	return nil, invalid("FleetRollout", ro.Name, errs)
}

// ValidateUpdate validates a changed FleetRollout.
func (v *FleetRolloutValidator) ValidateUpdate(
	ctx context.Context, old, ro *fleetv1alpha1.FleetRollout,
) (admission.Warnings, error) {
	var errs field.ErrorList
	if old.Spec.RollbackOf != ro.Spec.RollbackOf {
		// Nobody changes it, not even the controller: the rollback's plan
		// was taken from the rollout it names.
		errs = append(errs, field.Forbidden(field.NewPath("spec", "rollbackOf"), "may not change after creation"))
	}
	requested := changedWaveRequests(old, ro)
	intentChanged := cmp.Or(old.Spec.Intent, fleetv1alpha1.IntentRun) != cmp.Or(ro.Spec.Intent, fleetv1alpha1.IntentRun)
	approved := changedApprovals(old, ro)
	if len(requested) == 0 && old.Spec.Actor == ro.Spec.Actor && !intentChanged && len(approved) == 0 {
		return nil, invalid("FleetRollout", ro.Name, errs)
	}
	user, err := requestUser(ctx)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	if user.Username == v.controller {
		return nil, invalid("FleetRollout", ro.Name, errs)
	}
	if old.Spec.Actor != ro.Spec.Actor {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "actor"), "may not change after creation"))
	}
	if len(requested) == 0 && !intentChanged && len(approved) == 0 {
		return nil, invalid("FleetRollout", ro.Name, errs)
	}
	fs, fsErrs, err := v.fleetStage(ctx, ro)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	errs = append(errs, fsErrs...)
	if fs == nil {
		return nil, invalid("FleetRollout", ro.Name, errs)
	}
	if intentChanged {
		intentErrs, err := v.checkIntent(ctx, user, fs, ro)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		errs = append(errs, intentErrs...)
	}
	if len(approved) > 0 {
		approvalErrs, err := v.checkApprovals(ctx, user, fs, old, ro, approved)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		errs = append(errs, approvalErrs...)
	}
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
	return nil, invalid("FleetRollout", ro.Name, errs)
}

// ValidateDelete allows deleting a finished rollout to anyone RBAC lets.
// Deleting an unfinished one aborts it (the controller's finalizer aborts
// its running target Promotions), so it needs what aborting needs: Kargo's
// promote permission on every wave Stage. The cluster's own controllers
// (the garbage collector, the namespace controller) may always delete.
func (v *FleetRolloutValidator) ValidateDelete(ctx context.Context, ro *fleetv1alpha1.FleetRollout) (admission.Warnings, error) {
	if ro.Status.Phase.IsFinal() {
		return nil, nil
	}
	user, err := requestUser(ctx)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	if user.Username == v.controller || isClusterController(user) {
		return nil, nil
	}
	fs, _, err := v.fleetStage(ctx, ro)
	if err != nil || fs == nil {
		// Without its FleetStage the rollout moves nothing.
		return nil, client.IgnoreNotFound(err)
	}
	denied, err := v.checkPromote(ctx, user, fs, waveNames(fs))
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	if len(denied) == 0 {
		return nil, nil
	}
	return nil, apierrors.NewForbidden(fleetv1alpha1.GroupVersion.WithResource("fleetrollouts").GroupResource(), ro.Name,
		fmt.Errorf("user %q may not delete FleetRollout %q while it is %s: deleting a running rollout aborts it, which needs "+
			"Kargo's promote permission (verb promote on stages.kargo.akuity.io) on every wave Stage of FleetStage %q, and it lacks it on %s",
			user.Username, ro.Name, cmp.Or(ro.Status.Phase, fleetv1alpha1.RolloutPending), fs.Name, strings.Join(waveStages(fs.Name, denied), ", ")))
}

// checkIntent refuses a change of spec.intent (pause, resume, abort) by a
// user without Kargo's promote permission on every wave Stage of the
// FleetStage: stopping a fleet release, or letting it go on, is the same
// decision as starting one, and aborting makes the controller abort Kargo
// Promotions with its own rights.
func (v *FleetRolloutValidator) checkIntent(
	ctx context.Context, user authenticationv1.UserInfo, fs *fleetv1alpha1.FleetStage, ro *fleetv1alpha1.FleetRollout,
) (field.ErrorList, error) {
	denied, err := v.checkPromote(ctx, user, fs, waveNames(fs))
	if err != nil || len(denied) == 0 {
		return nil, err
	}
	return field.ErrorList{field.Forbidden(field.NewPath("spec", "intent"), fmt.Sprintf(
		"user %q may not set intent %s on a FleetRollout of FleetStage %q: pausing, resuming and aborting need Kargo's "+
			"promote permission (verb promote on stages.kargo.akuity.io) on every wave Stage, and it lacks it on %s",
		user.Username, cmp.Or(ro.Spec.Intent, fleetv1alpha1.IntentRun), fs.Name, strings.Join(waveStages(fs.Name, denied), ", ")))}, nil
}

// checkRollbackOf refuses a rollback of a rollout that does not exist, or
// that the rollback decision's rule refuses (rollout.CheckRollbackOf):
// another FleetStage's rollout, or a rollback.
func (v *FleetRolloutValidator) checkRollbackOf(ctx context.Context, ro *fleetv1alpha1.FleetRollout) (field.ErrorList, error) {
	if ro.Spec.Direction != fleetv1alpha1.DirectionRollback {
		return nil, nil
	}
	p := field.NewPath("spec", "rollbackOf")
	of := &fleetv1alpha1.FleetRollout{}
	err := v.reader.Get(ctx, client.ObjectKey{Namespace: ro.Namespace, Name: ro.Spec.RollbackOf}, of)
	switch {
	case apierrors.IsNotFound(err):
		return field.ErrorList{field.NotFound(p, ro.Spec.RollbackOf)}, nil
	case err != nil:
		return nil, fmt.Errorf("error getting FleetRollout %q: %w", ro.Spec.RollbackOf, err)
	}
	if reason, msg := fleetrule.CheckRollbackOf(ro.Spec.FleetStage, of); reason != "" {
		return field.ErrorList{field.Invalid(p, ro.Spec.RollbackOf, msg)}, nil
	}
	return nil, nil
}

// checkRollbackFreight applies the rollback decision's Freight rule
// (rollout.CheckRollbackFreight, as the step and the CLI do) to a rollback
// a user creates: it returns the fleet only to Freight that passed the
// FleetStage and is not held back after a breach.
func (v *FleetRolloutValidator) checkRollbackFreight(
	ctx context.Context, fs *fleetv1alpha1.FleetStage, ro *fleetv1alpha1.FleetRollout,
) (field.ErrorList, error) {
	freight := ro.Spec.Freight.Name
	rollouts, err := rolloutstore.List(ctx, v.reader, fs.Namespace, fs.Name,
		client.MatchingLabels{fleetv1alpha1.FreightLabel: fleetrollout.FreightLabelValue(freight)})
	if err != nil {
		return nil, err
	}
	if reason, msg := fleetrule.CheckRollbackFreight(fs, rollouts, freight); reason != "" {
		return field.ErrorList{field.Forbidden(field.NewPath("spec", "freight", "name"), msg+
			": a rollback returns the fleet only to Freight that passed it and is not held back; promote other Freight through Kargo")}, nil
	}
	return nil, nil
}

// waveStages returns the wave Stages of the named waves.
func waveStages(fleetStage string, waves []string) []string {
	out := make([]string, len(waves))
	for i, w := range waves {
		out[i] = render.WaveStageName(fleetStage, w)
	}
	return out
}

// waveNames returns the FleetStage's wave names, in order.
func waveNames(fs *fleetv1alpha1.FleetStage) []string {
	out := make([]string, 0, len(fs.Spec.Waves))
	for i := range fs.Spec.Waves {
		out = append(out, fs.Spec.Waves[i].Name)
	}
	return out
}

// isClusterController reports whether the user is one of the cluster's own
// controllers (kube-controller-manager's service accounts in kube-system),
// which delete objects for the garbage collector and namespace deletion.
func isClusterController(user authenticationv1.UserInfo) bool {
	return user.Username == "system:kube-controller-manager" ||
		strings.HasPrefix(user.Username, "system:serviceaccount:kube-system:")
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
