package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
	"github.com/kargo-fleet/kargo-fleet/internal/policy"
	"github.com/kargo-fleet/kargo-fleet/internal/policyread"
	"github.com/kargo-fleet/kargo-fleet/internal/strutil"
)

// PolicyCheck is what the FreightPolicies say of one Freight over a plan.
type PolicyCheck struct {
	Freight  string `json:"freight"`
	Targets  int    `json:"targets"`
	Blocked  int    `json:"blocked"`
	Policies int    `json:"policies"`
	// Waves are the waves with blocked targets, in wave order.
	Waves []policy.WaveBlocks `json:"waves,omitempty"`
}

// planWithPolicy is `plan --freight -o json|yaml`'s output.
type planWithPolicy struct {
	Plan          plan.PlanPreview `json:"plan"`
	FreightPolicy PolicyCheck      `json:"freightPolicy"`
}

// checkFreightPolicies checks freight over p against the FreightPolicies
// governing fs's Project, read with the user's rights (the chart lets every
// authenticated user read FreightPolicies unless told otherwise).
func checkFreightPolicies(ctx context.Context, c client.Client, fs *fleetv1alpha1.FleetStage, freight string,
	p *plan.WavePlan) (PolicyCheck, error) {
	out := PolicyCheck{Freight: freight, Targets: p.Members()}
	read := policyread.NewReader(c, c)
	governing, err := read.Governing(ctx, fs.Namespace)
	switch {
	case apierrors.IsForbidden(err):
		return out, fmt.Errorf("%w\nreading FreightPolicies needs get and list on freightpolicies.fleet.kargo-fleet.io "+
			"cluster-wide (the chart's ClusterRole <release>-freightpolicy-reader, bound to every authenticated user unless rbac.freightPoliciesReadableByAll is false)", err)
	case err != nil:
		return out, err
	}
	out.Policies = len(governing)
	if len(governing) == 0 {
		return out, nil
	}
	f, err := read.Freight(ctx, fs.Namespace, freight)
	if err != nil {
		return out, err
	}
	blocked := policy.CheckPlan(governing, &f, read.Signatures(ctx, governing, &f), p)
	out.Blocked, out.Waves = len(blocked), policy.Summarize(p, blocked)
	return out, nil
}

// renderPolicyCheck writes the check under the plan table.
func renderPolicyCheck(w io.Writer, pc PolicyCheck) error {
	var b strings.Builder
	switch {
	case pc.Policies == 0:
		fmt.Fprintf(&b, "\nFreightPolicy: no FreightPolicy governs this Project; Freight %s may run on every target.\n", pc.Freight)
	case pc.Blocked == 0:
		fmt.Fprintf(&b, "\nFreightPolicy: %d polic(ies) govern this Project; Freight %s may run on all %d target(s).\n",
			pc.Policies, pc.Freight, pc.Targets)
	default:
		fmt.Fprintf(&b, "\nFreightPolicy: Freight %s is blocked on %d of %d target(s):\n", pc.Freight, pc.Blocked, pc.Targets)
		for _, wb := range pc.Waves {
			effect := "passes without them (Skip)"
			if wb.Hold {
				effect = "holds: it will not pass while they are blocked"
			}
			fmt.Fprintf(&b, "  wave %s %s\n", wb.Wave, effect)
			for _, g := range wb.Groups {
				fmt.Fprintf(&b, "    %s: %s\n", strutil.Sample(g.Targets, 10), g.Rules)
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
