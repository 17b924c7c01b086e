package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// checkStageRights refuses a FleetStage whose author could not write,
// themselves, the Stages the controller writes for it: the controller
// creates and updates wave and target Stages in the Project, annotates the
// adopted Stage, and re-points every Stage that takes Freight from the
// adopted Stage to the fleet's last wave Stage. A FleetStage is therefore
// no more than its author's own Stage rights, exercised by the controller.
func (v *FleetStageValidator) checkStageRights(ctx context.Context, fs *fleetv1alpha1.FleetStage) (field.ErrorList, error) {
	user, err := requestUser(ctx)
	if err != nil {
		return nil, err
	}
	var errs field.ErrorList
	var missing []string
	for _, verb := range []string{"create", "update"} {
		ok, err := v.mayStages(ctx, user, fs.Namespace, verb, "")
		if err != nil {
			return nil, err
		}
		if !ok {
			missing = append(missing, verb)
		}
	}
	if len(missing) > 0 {
		errs = append(errs, field.Forbidden(field.NewPath("spec"), fmt.Sprintf(
			"user %q may not %s stages.kargo.akuity.io in namespace %q: the controller creates and updates the "+
				"FleetStage's wave and target Stages there, so its author must be allowed to",
			user.Username, strings.Join(missing, " and "), fs.Namespace)))
	}
	from := fs.Spec.Stage.FromStage
	if from == "" {
		return errs, nil
	}
	p := field.NewPath("spec", "stage", "fromStage")
	ok, err := v.mayStages(ctx, user, fs.Namespace, "update", from)
	if err != nil {
		return nil, err
	}
	if !ok {
		errs = append(errs, field.Forbidden(p, fmt.Sprintf(
			"user %q may not update Stage %q: adopting a Stage makes the controller write it (its description) and "+
				"promote its template to every target", user.Username, from)))
	}
	downstream, err := v.downstreamOf(ctx, fs.Namespace, from)
	if err != nil {
		return nil, err
	}
	for _, name := range downstream {
		ok, err := v.mayStages(ctx, user, fs.Namespace, "update", name)
		if err != nil {
			return nil, err
		}
		if !ok {
			errs = append(errs, field.Forbidden(p, fmt.Sprintf(
				"user %q may not update Stage %q, which takes Freight from %q: the controller re-points it to the "+
					"FleetStage's last wave Stage", user.Username, name, from)))
		}
	}
	return errs, nil
}

// mayStages reports whether user may do verb on Kargo Stages in ns (on the
// one named name, when set).
func (v *FleetStageValidator) mayStages(ctx context.Context, user authenticationv1.UserInfo, ns, verb, name string) (bool, error) {
	return v.access.Allowed(ctx, user, authorizationv1.ResourceAttributes{
		Namespace: ns, Verb: verb, Group: kargoGroup, Resource: kargoStages, Name: name,
	})
}

// downstreamOf returns the Stages of ns, other than generated ones, that
// take Freight from the Stage named from: those the controller re-points.
func (v *FleetStageValidator) downstreamOf(ctx context.Context, ns, from string) ([]string, error) {
	stages := &kargo.StageList{}
	if err := v.reader.List(ctx, stages, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("error listing Stages in namespace %q: %w", ns, err)
	}
	var out []string
	for i := range stages.Items {
		st := &stages.Items[i]
		if st.Labels[fleetv1alpha1.FleetStageLabel] == "" && st.Name != from && st.TakesFreightFrom(from) {
			out = append(out, st.Name)
		}
	}
	return out, nil
}

// secretCall matches a call of a Kargo expression function reading Secrets
// (secret(), and sharedSecret() of later Kargo versions).
var secretCall = regexp.MustCompile(`(?i)secret\w*\s*\(`)

// validateInlineSecrets refuses an inline template whose expressions read
// Secrets. Kargo evaluates a Stage's template with the Project's rights to
// read Secrets, and a FleetStage's template is copied to every target
// Stage; a template that needs a Secret belongs on a Kargo Stage, adopted
// with fromStage, where Kargo's own rules for Stages apply.
func validateInlineSecrets(in *fleetv1alpha1.InlineStageSpec) field.ErrorList {
	if in == nil {
		return nil
	}
	p := field.NewPath("spec", "stage", "inline")
	var errs field.ErrorList
	check := func(fp *field.Path, raw []byte) {
		if len(raw) == 0 {
			return
		}
		var doc any
		if json.Unmarshal(raw, &doc) != nil {
			return // refused as malformed elsewhere
		}
		if s, ok := findSecretCall(doc); ok {
			errs = append(errs, field.Invalid(fp, s, "an inline template may not read Secrets (secret()): "+
				"adopt a Kargo Stage with spec.stage.fromStage for a template that does"))
		}
	}
	check(p.Child("promotionTemplate"), in.PromotionTemplate.Raw)
	if in.Verification != nil {
		check(p.Child("verification"), in.Verification.Raw)
	}
	for i := range in.Vars {
		if s, ok := findSecretCall(in.Vars[i].Value); ok {
			errs = append(errs, field.Invalid(p.Child("vars").Index(i).Child("value"), s,
				"a Stage variable of an inline template may not read Secrets (secret())"))
		}
	}
	return errs
}

// findSecretCall returns the first string of a decoded JSON document (keys
// included) holding a Kargo expression that calls a Secret function.
func findSecretCall(doc any) (string, bool) {
	switch d := doc.(type) {
	case string:
		return d, callsSecret(d)
	case []any:
		for _, e := range d {
			if s, ok := findSecretCall(e); ok {
				return s, true
			}
		}
	case map[string]any:
		for k, e := range d {
			if callsSecret(k) {
				return k, true
			}
			if s, ok := findSecretCall(e); ok {
				return s, true
			}
		}
	}
	return "", false
}

// callsSecret reports whether s calls a Secret function after the start of
// a Kargo expression ("${{"). Text after the expression's end is checked
// too: an expression may hold "}}" itself, and refusing a template that
// merely mentions secret( in plain text costs nothing.
func callsSecret(s string) bool {
	_, rest, ok := strings.Cut(s, "${{")
	return ok && secretCall.MatchString(rest)
}
