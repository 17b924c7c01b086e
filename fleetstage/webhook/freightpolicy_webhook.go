package webhook

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/policy"
)

// ValidateFreightPolicyPath is where the FreightPolicy webhook is served.
const ValidateFreightPolicyPath = "/validate-fleet-kargo-fleet-io-v1alpha1-freightpolicy"

// FreightPolicyValidator refuses a FreightPolicy whose rules do not
// compile, naming the field. Who may write a FreightPolicy is RBAC's
// business alone: it is cluster-scoped, and the chart grants it to no
// Project role.
type FreightPolicyValidator struct{}

// ValidateCreate validates a new FreightPolicy.
func (FreightPolicyValidator) ValidateCreate(_ context.Context, p *fleetv1alpha1.FreightPolicy) (admission.Warnings, error) {
	_, errs := policy.Compile(p)
	return nil, invalid("FreightPolicy", p.Name, errs)
}

// ValidateUpdate validates a changed FreightPolicy.
func (FreightPolicyValidator) ValidateUpdate(_ context.Context, _, p *fleetv1alpha1.FreightPolicy) (admission.Warnings, error) {
	if !p.DeletionTimestamp.IsZero() {
		return nil, nil
	}
	_, errs := policy.Compile(p)
	return nil, invalid("FreightPolicy", p.Name, errs)
}

// ValidateDelete allows every deletion.
func (FreightPolicyValidator) ValidateDelete(context.Context, *fleetv1alpha1.FreightPolicy) (admission.Warnings, error) {
	return nil, nil
}
