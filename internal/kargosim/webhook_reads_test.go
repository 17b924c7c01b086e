package kargosim

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// TestPromotionAdmissionReadsTheCache: Kargo's Promotion webhooks read the
// Stage, the Project's namespace and the Freight through their manager's
// cache, so a Promotion create costs the apiserver the create and one
// SubjectAccessReview. The simulator reads the same way; only an object
// its cache does not hold yet is read from the apiserver.
func TestPromotionAdmissionReadsTheCache(t *testing.T) {
	t.Parallel()
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	require.NoError(t, kargo.AddToScheme(scheme))
	origin := kargo.FreightOrigin{Kind: kargo.OriginKindWarehouse, Name: "apps"}
	stage := func(name string) *kargo.Stage {
		return &kargo.Stage{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, UID: types.UID("uid-" + name)},
			Spec: kargo.StageSpec{
				RequestedFreight:  []kargo.FreightRequest{{Origin: origin, Sources: kargo.FreightSources{Direct: true}}},
				PromotionTemplate: &kargo.PromotionTemplate{Spec: kargo.PromotionTemplateSpec{Steps: []kargo.PromotionStep{{Uses: "fake"}}}},
			}}
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop", Labels: map[string]string{kargo.ProjectLabel: "true"}}}
	freight := &kargo.Freight{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "f1"}, Origin: origin}
	cached := []client.Object{ns, freight, stage("cached")}

	var apiserverReads atomic.Int32
	reader := fake.NewClientBuilder().WithScheme(scheme).WithObjects(append(cached, stage("new"))...).
		WithInterceptorFuncs(interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			apiserverReads.Add(1)
			return c.Get(ctx, key, obj, opts...)
		}}).Build()
	cache := fake.NewClientBuilder().WithScheme(scheme).WithObjects(cached...).
		WithInterceptorFuncs(interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if sar, ok := obj.(*authorizationv1.SubjectAccessReview); ok {
				sar.Status.Allowed = true
				return nil
			}
			return c.Create(ctx, obj, opts...)
		}}).Build()
	s := &Simulator{opts: Options{}.withDefaults(), client: cache, reader: reader, ulids: newULIDSource()}
	decoder := admission.NewDecoder(scheme)
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: admissionv1.Create, Namespace: "shop",
		UserInfo: authenticationv1.UserInfo{Username: "alice"}}}

	admit := func(stageName string) error {
		p := kargo.NewPromotion("shop", stageName, "f1", nil, nil)
		if err := s.defaultPromotion(t.Context(), req, p, decoder); err != nil {
			return err
		}
		return s.validatePromotion(t.Context(), req, p, decoder)
	}
	require.NoError(t, admit("cached"))
	require.Zero(t, apiserverReads.Load(), "the Stage, the namespace and the Freight are read from the cache")

	require.NoError(t, admit("new"), "a Stage the cache does not hold yet is found in the apiserver")
	require.Equal(t, int32(2), apiserverReads.Load(), "one apiserver read of the Stage per webhook")

	err := admit("missing")
	require.Error(t, err)
	require.Contains(t, err.Error(), `could not find Stage "missing"`)
}
