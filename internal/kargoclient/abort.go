package kargoclient

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// AbortPromotion asks Kargo to abort a Promotion (its abort annotation,
// "terminate"): Kargo ends a Pending or Running one within about 100 ms,
// though a step inside its request finishes first. A merge patch of the
// annotation alone; Kargo's webhook requires the custom verb "promote" on
// the Promotion's Stage besides patch on promotions. A Promotion that no
// longer exists is not an error.
func AbortPromotion(ctx context.Context, c client.Writer, promotion types.NamespacedName) error {
	p := &kargo.Promotion{}
	p.Namespace, p.Name = promotion.Namespace, promotion.Name
	patch := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`,
		kargo.AbortAnnotation, kargo.AbortTerminate))
	if err := c.Patch(ctx, p, patch); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("error aborting Promotion %q: %w", promotion.Name, err)
	}
	return nil
}
