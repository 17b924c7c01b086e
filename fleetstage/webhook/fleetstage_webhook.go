// Package webhook holds kargo-fleet's validating admission webhooks.
//
// The FleetStage webhook rejects what the CRD schema and CEL rules cannot
// see (expr-lang expressions, cron schedules, time zones, label selectors,
// inline promotion templates, adopted Stages, inventory access) with the
// field path in every message, so a bad spec is never stored and then
// failing in the reconciler.
//
// The FleetRollout webhook keeps FleetRollouts from becoming a way around
// Kargo's promote permission: see FleetRolloutValidator.
package webhook

import (
	"context"
	"fmt"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/analysis/fleetspec"
	"github.com/kargo-fleet/kargo-fleet/internal/inventory"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
	"github.com/kargo-fleet/kargo-fleet/internal/promqlcheck"
	"github.com/kargo-fleet/kargo-fleet/internal/render"
)

// ValidatePath is where the FleetStage webhook is served.
const ValidatePath = "/validate-fleet-kargo-fleet-io-v1alpha1-fleetstage"

// FleetStageValidator validates FleetStages with the same functions the
// reconciler and the CLI's plan preview use, and checks what only the
// cluster knows: that the requesting user may read the inventory the
// FleetStage names, that the operator allows reading it, that no other
// FleetStage adopts the same Stage, and that the requesting user may write
// the Stages the controller writes for the FleetStage (see
// checkStageRights).
type FleetStageValidator struct {
	reader     client.Reader
	access     AccessReviewer
	namespaces inventory.NamespacePolicy
	kinds      inventory.Kinds
}

var _ admission.Validator[*fleetv1alpha1.FleetStage] = (*FleetStageValidator)(nil)

// NewFleetStageValidator returns a validator listing FleetStages with r,
// reviewing access with a and allowing inventory of the
// inventory.DefaultKinds from namespaces.
func NewFleetStageValidator(r client.Reader, a AccessReviewer, namespaces inventory.NamespacePolicy) *FleetStageValidator {
	return &FleetStageValidator{reader: r, access: a, namespaces: namespaces, kinds: inventory.DefaultKinds()}
}

// WithKinds sets the inventory source kinds the validator knows and returns
// it.
func (v *FleetStageValidator) WithKinds(ks inventory.Kinds) *FleetStageValidator {
	v.kinds = ks
	return v
}

// ValidateCreate validates a new FleetStage.
func (v *FleetStageValidator) ValidateCreate(ctx context.Context, fs *fleetv1alpha1.FleetStage) (admission.Warnings, error) {
	return v.validate(ctx, nil, fs)
}

// ValidateUpdate validates a changed FleetStage. An update that leaves the
// spec as it is (a finalizer, a label, an annotation) is allowed: the spec
// was admitted before, and rules added since must not block the controller
// from removing its finalizer or an operator from annotating.
func (v *FleetStageValidator) ValidateUpdate(ctx context.Context, old, fs *fleetv1alpha1.FleetStage) (admission.Warnings, error) {
	if !fs.DeletionTimestamp.IsZero() || equality.Semantic.DeepEqual(&old.Spec, &fs.Spec) {
		return nil, nil
	}
	return v.validate(ctx, old, fs)
}

// ValidateDelete allows every deletion.
func (*FleetStageValidator) ValidateDelete(context.Context, *fleetv1alpha1.FleetStage) (admission.Warnings, error) {
	return nil, nil
}

// validate runs every check; old is nil on create. The cluster checks run
// on create and when what they check changes: a rule added later, or another
// FleetStage created meanwhile, never blocks unrelated edits.
func (v *FleetStageValidator) validate(ctx context.Context, old, fs *fleetv1alpha1.FleetStage) (admission.Warnings, error) {
	errs := validateSpec(fs, v.kinds)
	if old == nil || !equality.Semantic.DeepEqual(old.Spec.Targets.Sources, fs.Spec.Targets.Sources) {
		sourceErrs, err := v.checkSources(ctx, fs)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		errs = append(errs, sourceErrs...)
	}
	if old == nil || old.Spec.Stage.FromStage != fs.Spec.Stage.FromStage {
		adoptErrs, err := v.checkAdoption(ctx, fs)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		errs = append(errs, adoptErrs...)
	}
	if ref := prometheusSecret(fs); ref != "" && (old == nil || prometheusSecret(old) != ref) {
		secretErrs, err := v.checkPrometheusSecret(ctx, fs, ref)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		errs = append(errs, secretErrs...)
	}
	// Every change of the spec changes what the controller writes into
	// Stages: its author must be allowed to write them.
	rightsErrs, err := v.checkStageRights(ctx, fs)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	errs = append(errs, rightsErrs...)
	return append(Warnings(fs), CeilingWarning(fs, old)...), invalid("FleetStage", fs.Name, errs)
}

// checkSources refuses a source whose namespace the operator does not
// allow, or that the requesting user may not read: the controller reads any
// Secret, and would otherwise copy another team's inventory into Stages the
// author can read.
func (v *FleetStageValidator) checkSources(ctx context.Context, fs *fleetv1alpha1.FleetStage) (field.ErrorList, error) {
	var errs field.ErrorList
	user, err := requestUser(ctx)
	if err != nil {
		return nil, err
	}
	for i := range fs.Spec.Targets.Sources {
		src := &fs.Spec.Targets.Sources[i]
		k, ok := v.kinds.Get(src.Kind)
		if !ok || !k.ReadsObjects() {
			continue
		}
		p := field.NewPath("spec", "targets", "sources").Index(i).Child("namespace")
		ns := k.Namespace(fs.Namespace, src)
		if !v.namespaces.Allows(k, fs.Namespace, ns) {
			errs = append(errs, field.Forbidden(p, inventory.NewForbiddenNamespaceError(k, ns, v.namespaces).Error()))
			continue
		}
		allowed, err := v.mayRead(ctx, user, ns, k.GVK.Group, k.Resource)
		if err != nil {
			return nil, err
		}
		if !allowed {
			errs = append(errs, field.Forbidden(p, fmt.Sprintf(
				"user %q may not list %s in namespace %q, so a FleetStage of theirs may not read them either",
				user.Username, qualified(k.GVK.Group, k.Resource), ns)))
		}
	}
	return errs, nil
}

// prometheusSecret names the Secret spec.analysis.prometheus.secretRef
// refers to, or "".
func prometheusSecret(fs *fleetv1alpha1.FleetStage) string {
	if a := fs.Spec.Analysis; a != nil && a.Prometheus.SecretRef != nil {
		return a.Prometheus.SecretRef.Name
	}
	return ""
}

// checkPrometheusSecret refuses a Prometheus Secret the requesting user may
// not get: the controller reads it and sends its credentials to
// spec.analysis.prometheus.address, which the author chooses.
func (v *FleetStageValidator) checkPrometheusSecret(ctx context.Context, fs *fleetv1alpha1.FleetStage, name string) (field.ErrorList, error) {
	user, err := requestUser(ctx)
	if err != nil {
		return nil, err
	}
	ok, err := v.access.Allowed(ctx, user, authorizationv1.ResourceAttributes{
		Namespace: fs.Namespace, Verb: "get", Resource: "secrets", Name: name,
	})
	if err != nil || ok {
		return nil, err
	}
	return field.ErrorList{field.Forbidden(field.NewPath("spec", "analysis", "prometheus", "secretRef", "name"), fmt.Sprintf(
		"user %q may not get Secret %q in namespace %q, so a FleetStage of theirs may not send its credentials to Prometheus",
		user.Username, name, fs.Namespace))}, nil
}

// mayRead reports whether user may list, or else get, the resource in ns.
func (v *FleetStageValidator) mayRead(ctx context.Context, user authenticationv1.UserInfo, ns, group, resource string) (bool, error) {
	for _, verb := range []string{"list", "get"} {
		ok, err := v.access.Allowed(ctx, user, authorizationv1.ResourceAttributes{
			Namespace: ns, Verb: verb, Group: group, Resource: resource,
		})
		if err != nil || ok {
			return ok, err
		}
	}
	return false, nil
}

// checkAdoption refuses adopting a Stage another FleetStage of the Project
// adopts: both would render target Stages from it and promote the same
// Freight twice.
func (v *FleetStageValidator) checkAdoption(ctx context.Context, fs *fleetv1alpha1.FleetStage) (field.ErrorList, error) {
	if fs.Spec.Stage.FromStage == "" {
		return nil, nil
	}
	var list fleetv1alpha1.FleetStageList
	if err := v.reader.List(ctx, &list, client.InNamespace(fs.Namespace)); err != nil {
		return nil, fmt.Errorf("error listing FleetStages in namespace %q: %w", fs.Namespace, err)
	}
	for i := range list.Items {
		other := &list.Items[i]
		if other.Name != fs.Name && other.DeletionTimestamp.IsZero() && other.Spec.Stage.FromStage == fs.Spec.Stage.FromStage {
			return field.ErrorList{field.Duplicate(field.NewPath("spec", "stage", "fromStage"), fmt.Sprintf(
				"%s (already adopted by FleetStage %q)", fs.Spec.Stage.FromStage, other.Name))}, nil
		}
	}
	return nil, nil
}

func qualified(group, resource string) string {
	if group == "" {
		return resource
	}
	return resource + "." + group
}

// Validate returns an Invalid API error listing every problem of the spec
// that the CRD schema cannot see, or nil. It needs no cluster: the CLI, the
// examples test and the fuzz test call it.
func Validate(fs *fleetv1alpha1.FleetStage) error {
	return invalid("FleetStage", fs.Name, validateSpec(fs, inventory.DefaultKinds()))
}

// validateSpec is Validate's error list for sources of the given kinds.
func validateSpec(fs *fleetv1alpha1.FleetStage, kinds inventory.Kinds) field.ErrorList {
	errs := plan.Validate(&fs.Spec)
	errs = append(errs, kinds.Validate(fs.Spec.Targets.Sources, field.NewPath("spec", "targets", "sources"))...)
	if fs.Spec.Stage.Inline != nil {
		if _, err := render.BaseFromInline(fs.Spec.Stage.Inline); err != nil {
			path, detail, _ := strings.Cut(err.Error(), ": ")
			errs = append(errs, field.Invalid(field.NewPath(path), "", detail))
		}
	}
	if from := fs.Spec.Stage.FromStage; from != "" {
		for i := range fs.Spec.Waves {
			if render.WaveStageName(fs.Name, fs.Spec.Waves[i].Name) == from {
				errs = append(errs, field.Invalid(field.NewPath("spec", "stage", "fromStage"), from,
					fmt.Sprintf("names the Stage of this FleetStage's wave %q: adopt the Stage the fleet is expanded from",
						fs.Spec.Waves[i].Name)))
			}
		}
	}
	errs = append(errs, validateInlineSecrets(fs.Spec.Stage.Inline)...)
	// Templates, conditions and bounds, and the PromQL of every query
	// rendered with sample values, parsed by Prometheus's parser.
	errs = append(errs, fleetspec.Validate(&fs.Spec, promqlcheck.Check)...)
	for i := range fs.Spec.Targets.Sources {
		errs = append(errs, validateInlineTargets(&fs.Spec.Targets.Sources[i],
			field.NewPath("spec", "targets", "sources").Index(i))...)
	}
	return errs
}

// validateInlineTargets refuses inline target data holding a Kargo
// expression: it would reach the target's Stage as a variable and be
// evaluated there.
func validateInlineTargets(src *fleetv1alpha1.TargetSource, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for j := range src.Inline {
		t := &src.Inline[j]
		targets := inventory.FromInline([]fleetv1alpha1.InlineTarget{*t})
		if err := inventory.CheckExpressions(targets); err != nil {
			errs = append(errs, field.Invalid(fldPath.Child("inline").Index(j), t.Name, err.Error()))
		}
	}
	return errs
}

// Warnings returns admission warnings: settings that are valid but almost
// certainly not meant, such as a wave failure threshold that can never halt.
func Warnings(fs *fleetv1alpha1.FleetStage) admission.Warnings {
	var out admission.Warnings
	for i := range fs.Spec.Waves {
		w := &fs.Spec.Waves[i]
		if w.MaxFailures == nil {
			continue
		}
		mf := *w.MaxFailures
		p := field.NewPath("spec", "waves").Index(i).Child("maxFailures")
		switch {
		case mf.Type == intstr.String && mf.StrVal == "100%":
			out = append(out, fmt.Sprintf("%s: 100%% lets every target of wave %q fail: this wave can never halt the rollout",
				p, w.Name))
		case mf.Type == intstr.Int && w.Count != nil && w.Count.Type == intstr.Int && mf.IntVal >= w.Count.IntVal:
			out = append(out, fmt.Sprintf("%s: %d lets every one of the %d targets of wave %q fail: "+
				"this wave can never halt the rollout", p, mf.IntVal, w.Count.IntVal, w.Name))
		}
	}
	return out
}

// invalid returns an Invalid API error of a kind for errs, or nil.
func invalid(kind, name string, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(fleetv1alpha1.GroupVersion.WithKind(kind).GroupKind(), name, errs)
}
