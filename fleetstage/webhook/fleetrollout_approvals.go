package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	fleetrule "github.com/kargo-fleet/kargo-fleet/internal/rollout"
)

// changedApprovals names the waves whose approvals annotation changed.
func changedApprovals(old, ro *fleetv1alpha1.FleetRollout) []string {
	var out []string
	seen := map[string]bool{}
	for _, annotations := range []map[string]string{old.Annotations, ro.Annotations} {
		for k := range annotations {
			wave, ok := strings.CutPrefix(k, fleetv1alpha1.ApprovalsAnnotationPrefix)
			if ok && !seen[wave] && old.Annotations[k] != ro.Annotations[k] {
				seen[wave] = true
				out = append(out, wave)
			}
		}
	}
	slices.Sort(out)
	return out
}

// checkApprovals admits a wave's approval only from a person who holds the
// verb approve on the FleetStage, appending their own approval, once, to
// an unfinished rollout whose wave requires an N-person approval.
func (v *FleetRolloutValidator) checkApprovals(ctx context.Context, user authenticationv1.UserInfo,
	fs *fleetv1alpha1.FleetStage, old, ro *fleetv1alpha1.FleetRollout, waves []string) (field.ErrorList, error) {
	var errs field.ErrorList
	allowed, err := v.access.Allowed(ctx, user, authorizationv1.ResourceAttributes{Namespace: fs.Namespace,
		Group: fleetv1alpha1.GroupVersion.Group, Resource: "fleetstages", Name: fs.Name, Verb: fleetrule.ApproveVerb})
	if err != nil {
		return nil, err
	}
	for _, wave := range waves {
		p := field.NewPath("metadata", "annotations").Key(fleetv1alpha1.ApprovalsAnnotationPrefix + wave)
		var after []fleetrule.Approval
		i := slices.IndexFunc(fs.Spec.Waves, func(w fleetv1alpha1.Wave) bool { return w.Name == wave })
		switch {
		case !allowed:
			errs = append(errs, field.Forbidden(p, fmt.Sprintf("user %q may not approve waves of FleetStage %q: it needs the "+
				"verb %q on fleetstages.fleet.kargo-fleet.io %q in namespace %q (the chart's ClusterRole kargo-fleet-approver)",
				user.Username, fs.Name, fleetrule.ApproveVerb, fs.Name, fs.Namespace)))
		case i < 0 || fs.Spec.Waves[i].Approvals == nil:
			errs = append(errs, field.Forbidden(p, fmt.Sprintf("wave %q of FleetStage %q takes no N-person approval "+
				"(spec.waves[].approvals)", wave, fs.Name)))
		case ro.Status.Phase.IsFinal():
			errs = append(errs, field.Forbidden(p, fmt.Sprintf("FleetRollout %s is %s: there is nothing left to approve",
				ro.Name, ro.Status.Phase)))
		case json.Unmarshal([]byte(ro.Annotations[fleetv1alpha1.ApprovalsAnnotationPrefix+wave]), &after) != nil:
			errs = append(errs, field.Invalid(p, ro.Annotations[fleetv1alpha1.ApprovalsAnnotationPrefix+wave],
				"a JSON list of {user, groups, at}"))
		default:
			if err := fleetrule.CheckApprovalChange(fleetrule.ApprovalsOf(old, wave), after, user.Username, user.Groups); err != nil {
				errs = append(errs, field.Forbidden(p, err.Error()))
			}
		}
	}
	return errs, nil
}
