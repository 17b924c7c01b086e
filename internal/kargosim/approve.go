package kargosim

import (
	"context"
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// Approve does what `kargo approve --freight F --stage S` does: it checks
// that the caller (whoever c authenticates as) holds the custom verb
// "promote" on the Stage, then records the approval in the Freight's status
// (approvedFor[S]), which makes the Freight available to S whatever the
// upstream Stages did. freight names the Freight and its project; the Stage
// is in the same project. Kargo's API server makes the same check with a
// SubjectAccessReview for the user; here the caller asks for itself.
func Approve(ctx context.Context, c client.Client, freight client.ObjectKey, stage string) error {
	return approve(ctx, c, clock.RealClock{}, freight, stage)
}

func approve(ctx context.Context, c client.Client, clk clock.PassiveClock, key client.ObjectKey, stage string) error {
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Group: kargo.GroupVersion.Group, Resource: "stages", Name: stage,
			Verb: kargo.PromoteVerb, Namespace: key.Namespace,
		},
	}}
	if err := c.Create(ctx, review); err != nil {
		return fmt.Errorf("error checking permission to approve Freight %q for Stage %q: %w", key.Name, stage, err)
	}
	if !review.Status.Allowed {
		return fmt.Errorf("error approving Freight %q for Stage %q: not permitted to promote to Stage %q",
			key.Name, stage, stage)
	}
	var st kargo.Stage
	if err := c.Get(ctx, client.ObjectKey{Namespace: key.Namespace, Name: stage}, &st); err != nil {
		return fmt.Errorf("error getting Stage %q in namespace %q: %w", stage, key.Namespace, err)
	}
	return recordApproval(ctx, c, clk, key, stage)
}

// recordApproval patches approvedFor[stage] into the Freight's status,
// unless it is there already.
func recordApproval(ctx context.Context, c client.Client, clk clock.PassiveClock, key client.ObjectKey, stage string) error {
	var f kargo.Freight
	if err := c.Get(ctx, key, &f); err != nil {
		return fmt.Errorf("error getting Freight %q in namespace %q: %w", key.Name, key.Namespace, err)
	}
	if f.IsApprovedFor(stage) {
		return nil
	}
	base := f.DeepCopy()
	if f.Status.ApprovedFor == nil {
		f.Status.ApprovedFor = map[string]kargo.ApprovedStage{}
	}
	f.Status.ApprovedFor[stage] = kargo.ApprovedStage{ApprovedAt: &metav1.Time{Time: clk.Now()}}
	if err := c.Status().Patch(ctx, &f, client.MergeFrom(base)); err != nil {
		return fmt.Errorf("error approving Freight %q for Stage %q: %w", key.Name, stage, err)
	}
	return nil
}
