package doctor

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
	"github.com/kargo-fleet/kargo-fleet/internal/policy"
	"github.com/kargo-fleet/kargo-fleet/internal/policyread"
	"github.com/kargo-fleet/kargo-fleet/internal/strutil"
)

// checkFreightPolicy says, before a rollout starts, which targets the
// FreightPolicies governing the Project block the Project's newest Freight
// on, by which rules, and whether their waves would hold.
func (d *Doctor) checkFreightPolicy(ctx context.Context, fs *fleetv1alpha1.FleetStage, p *plan.WavePlan, planErr error) Result {
	read := policyread.NewReader(d.c, d.c)
	governing, err := read.Governing(ctx, fs.Namespace)
	switch {
	case apierrors.IsForbidden(err):
		return warn(CheckFreightPolicy, "bind the chart's ClusterRole <release>-freightpolicy-reader to this user",
			"cannot read FreightPolicies: %v", err)
	case err != nil:
		return fail(CheckFreightPolicy, "", "error reading FreightPolicies: %v", err)
	case len(governing) == 0:
		return ok(CheckFreightPolicy, "no FreightPolicy governs Project %s", fs.Namespace)
	case planErr != nil:
		return warn(CheckFreightPolicy, "fix the plan first (kargo-fleet plan)", "%d FreightPolicy(ies) govern Project %s; "+
			"targets not checked: %v", len(governing), fs.Namespace, planErr)
	}
	newest, err := d.newestFreight(ctx, fs.Namespace)
	if err != nil {
		return fail(CheckFreightPolicy, "grant this user list on freights in "+fs.Namespace, "%v", err)
	}
	if newest == "" {
		return ok(CheckFreightPolicy, "%d FreightPolicy(ies) govern Project %s; no Freight to check yet", len(governing), fs.Namespace)
	}
	f, err := read.Freight(ctx, fs.Namespace, newest)
	if err != nil {
		return fail(CheckFreightPolicy, "grant this user get on freights in "+fs.Namespace, "%v", err)
	}
	blocked := policy.CheckPlan(governing, &f, read.Signatures(ctx, governing, &f), p)
	if len(blocked) == 0 {
		return ok(CheckFreightPolicy, "%d FreightPolicy(ies) govern Project %s; the newest Freight %s may run on all %d target(s)",
			len(governing), fs.Namespace, newest, p.Members())
	}
	var b strings.Builder
	for _, wb := range policy.Summarize(p, blocked) {
		effect := "passes without them"
		if wb.Hold {
			effect = "holds"
		}
		for _, g := range wb.Groups {
			fmt.Fprintf(&b, "; wave %s (%s): %s by %s", wb.Wave, effect, strutil.Sample(g.Targets, 5), g.Rules)
		}
	}
	return warn(CheckFreightPolicy, fmt.Sprintf("kargo-fleet plan %s -n %s --freight %s lists them; change the Freight or "+
		"the FreightPolicy (docs/policy.md)", fs.Name, fs.Namespace, newest),
		"the newest Freight %s is blocked on %d of %d target(s)%s", newest, len(blocked), p.Members(), b.String())
}

// newestFreight names the Project's most recently created Freight; "" when
// there is none.
func (d *Doctor) newestFreight(ctx context.Context, namespace string) (string, error) {
	var list metav1.PartialObjectMetadataList
	list.SetGroupVersionKind(kargo.GroupVersion.WithKind("FreightList"))
	if err := d.c.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return "", fmt.Errorf("error listing the Freight of Project %q: %w", namespace, err)
	}
	newest := ""
	var at metav1.Time
	for i := range list.Items {
		m := &list.Items[i]
		if newest == "" || at.Before(&m.CreationTimestamp) || (at.Equal(&m.CreationTimestamp) && m.Name > newest) {
			newest, at = m.Name, m.CreationTimestamp
		}
	}
	return newest, nil
}
