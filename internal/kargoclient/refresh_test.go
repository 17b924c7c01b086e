package kargoclient

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

func TestRefreshPromotion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	promo := &kargo.Promotion{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "prod-canary.01jabcdefgh.0123456",
			Annotations: map[string]string{"keep": "me"}},
		Spec:   kargo.PromotionSpec{Stage: "prod-canary", Freight: "0123456789abcdef0123456789abcdef01234567"},
		Status: kargo.PromotionStatus{Phase: kargo.PromotionRunning},
	}
	scheme := apiruntime.NewScheme()
	require.NoError(t, kargo.AddToScheme(scheme))
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(promo).Build()
	key := client.ObjectKeyFromObject(promo)

	require.NoError(t, RefreshPromotion(ctx, c, key))
	var got kargo.Promotion
	require.NoError(t, c.Get(ctx, key, &got))
	first := got.Annotations[kargo.RefreshAnnotation]
	require.NotEmpty(t, first)
	require.Equal(t, "me", got.Annotations["keep"])

	require.NoError(t, RefreshPromotion(ctx, c, key))
	require.NoError(t, c.Get(ctx, key, &got))
	require.NotEqual(t, first, got.Annotations[kargo.RefreshAnnotation], "every refresh sets a new value")

	require.NoError(t, RefreshPromotion(ctx, c, types.NamespacedName{Namespace: key.Namespace, Name: "gone"}),
		"a Promotion that is gone needs no refresh")
}
