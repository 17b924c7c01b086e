package steps

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

func TestRefreshPromotion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	promo := testPromotion(testPromo, "prod-canary", testFreight, kargo.PromotionRunning)
	promo.Annotations = map[string]string{"keep": "me"}
	c := newFakeClient(t, promo)
	key := types.NamespacedName{Namespace: testProject, Name: testPromo}

	require.NoError(t, RefreshPromotion(ctx, c, key))
	var got kargo.Promotion
	require.NoError(t, c.Get(ctx, key, &got))
	first := got.Annotations[kargo.RefreshAnnotation]
	require.NotEmpty(t, first)
	require.Equal(t, "me", got.Annotations["keep"])

	require.NoError(t, RefreshPromotion(ctx, c, key))
	require.NoError(t, c.Get(ctx, key, &got))
	require.NotEqual(t, first, got.Annotations[kargo.RefreshAnnotation], "every refresh sets a new value")

	require.NoError(t, RefreshPromotion(ctx, c, client.ObjectKey{Namespace: testProject, Name: "gone"}),
		"a Promotion that is gone needs no refresh")
}
