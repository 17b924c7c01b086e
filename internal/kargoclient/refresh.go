package kargoclient

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// RefreshPromotion sets a new value of Kargo's refresh annotation on a
// Promotion, so that Kargo runs its polling step again at once instead of up
// to pollInterval (at least 10 s) later. The rollout controller calls it when
// the work behind a polling step is done, e.g. with the Promotion named by
// WaveRequests for a wave that finished.
//
// It is a merge patch of the annotation alone, so it never conflicts. Kargo's
// webhook requires the caller to hold the custom verb "promote" on the
// Promotion's Stage as well as patch on promotions. A Promotion that no
// longer exists is not an error.
//
// +kubebuilder:rbac:groups=kargo.akuity.io,resources=promotions,verbs=patch
// +kubebuilder:rbac:groups=kargo.akuity.io,resources=stages,verbs=promote
func RefreshPromotion(ctx context.Context, c client.Writer, promotion types.NamespacedName) error {
	nonce := make([]byte, 8)
	if _, err := rand.Read(nonce); err != nil {
		return fmt.Errorf("error generating refresh token: %w", err)
	}
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{
			"annotations": map[string]string{kargo.RefreshAnnotation: hex.EncodeToString(nonce)},
		},
	})
	if err != nil {
		return fmt.Errorf("error encoding refresh patch: %w", err)
	}
	promo := &kargo.Promotion{}
	promo.Namespace, promo.Name = promotion.Namespace, promotion.Name
	if err := c.Patch(ctx, promo, client.RawPatch(types.MergePatchType, patch)); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("error refreshing Promotion %q: %w", promotion.Name, err)
	}
	return nil
}
