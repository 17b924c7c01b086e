package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetrollout"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/render"
)

// TestPromotionGuardReadsTheCacheWithoutCopies: every Promotion of a
// Project passes the guard, the fleet's own too, so its reads must not
// copy the FleetStage (most of a megabyte for ten thousand inline targets)
// or the rollouts.
func TestPromotionGuardReadsTheCacheWithoutCopies(t *testing.T) {
	t.Parallel()
	ro := rollout(nil)
	ro.Labels = map[string]string{fleetv1alpha1.FleetStageLabel: "prod",
		fleetv1alpha1.FreightLabel: fleetrollout.FreightLabelValue("abc123")}
	var reads int
	var copies []string
	c := interceptor.NewClient(testClient(t, prodFleet(), ro).(client.WithWatch), interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			o := &client.GetOptions{}
			o.ApplyOptions(opts)
			reads++
			if o.UnsafeDisableDeepCopy == nil || !*o.UnsafeDisableDeepCopy {
				copies = append(copies, fmt.Sprintf("Get %T %s", obj, key))
			}
			return c.Get(ctx, key, obj, opts...)
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			o := &client.ListOptions{}
			o.ApplyOptions(opts)
			reads++
			if o.UnsafeDisableDeepCopy == nil || !*o.UnsafeDisableDeepCopy {
				copies = append(copies, fmt.Sprintf("List %T", list))
			}
			return c.List(ctx, list, opts...)
		},
	})
	s := apiruntime.NewScheme()
	require.NoError(t, kargo.AddToScheme(s))
	guard := NewPromotionGuard(c, fakeAccess{}, testController, admission.NewDecoder(s), nil)

	admit := func(p *kargo.Promotion) admission.Response {
		raw, err := json.Marshal(p)
		require.NoError(t, err)
		return guard.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			Operation: admissionv1.Create, Namespace: "shop", UserInfo: authenticationv1.UserInfo{Username: testController},
			Object: apiruntime.RawExtension{Raw: raw},
		}})
	}
	labels := map[string]string{fleetv1alpha1.FleetStageLabel: "prod", fleetv1alpha1.RolloutLabel: ro.Name,
		fleetv1alpha1.TargetLabel: "t1"}
	resp := admit(kargo.NewPromotion("shop", render.TargetStageName("prod", "t1"), "abc123", labels, nil))
	require.True(t, resp.Allowed, "the open rollout's Promotion is admitted: %v", resp.Result)
	require.GreaterOrEqual(t, reads, 3, "the guard reads the FleetStages, the rollouts of the Freight and the rollout")
	require.Empty(t, copies, "every read of the guard takes the cache's own objects")

	// The same reads still judge: a Promotion naming a rollout that does
	// not exist carries out no decision and is refused.
	labels[fleetv1alpha1.RolloutLabel] = "gone"
	resp = admit(kargo.NewPromotion("shop", render.TargetStageName("prod", "t1"), "abc123", labels, nil))
	require.False(t, resp.Allowed)
	require.Empty(t, copies)
}
