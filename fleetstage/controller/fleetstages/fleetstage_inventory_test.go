package fleetstages

import (
	"context"
	"maps"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/inventory"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

// argoSource is an Argo CD cluster source of the argocd namespace selecting
// region=<region>.
func argoSource(region string, annotations ...string) fleetv1alpha1.TargetSource {
	return fleetv1alpha1.TargetSource{Kind: fleetv1alpha1.ArgoCDClusterSource, Annotations: annotations,
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": region}}}
}

// regionSecret is an Argo CD cluster Secret of namespace ns in region.
func regionSecret(ns, region string, mutate func(*corev1.Secret)) *corev1.Secret {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cluster-1", ResourceVersion: "1",
			Labels:      map[string]string{inventory.ArgoCDSecretTypeLabel: inventory.ArgoCDSecretTypeCluster, "region": region},
			Annotations: map[string]string{"example.com/cell": "7"}},
		Data: map[string][]byte{"server": []byte("https://c1"), "config": []byte(`{"bearerToken":"a"}`)},
	}
	if mutate != nil {
		mutate(s)
	}
	return s
}

func Test_inventoryHandler(t *testing.T) {
	t.Parallel()
	kinds := inventory.DefaultKinds()
	fleet := func(ns, name string, sources ...fleetv1alpha1.TargetSource) *fleetv1alpha1.FleetStage {
		fs := testutil.MakeFleetStage(ns, name).Obj()
		fs.Spec.Targets.Sources = sources
		return fs
	}
	other := argoSource("eu")
	other.Namespace = "argocd-2"
	fleets := []client.Object{
		fleet("shop", "eu", argoSource("eu")),
		fleet("shop", "eu-cells", argoSource("eu", "example.com/cell")),
		fleet("pay", "us", argoSource("us")),
		fleet("pay", "everything", fleetv1alpha1.TargetSource{Kind: fleetv1alpha1.ArgoCDClusterSource}),
		fleet("pay", "other-namespace", other),
		fleet("pay", "kargo-targets", fleetv1alpha1.TargetSource{Kind: fleetv1alpha1.KargoTargetSource}),
	}
	eu := func(mutate func(*corev1.Secret)) *corev1.Secret { return regionSecret("argocd", "eu", mutate) }
	tests := []struct {
		name          string
		before, after client.Object
		want          []string
		wantNoList    bool
	}{
		{name: "token rotated", before: eu(nil), after: eu(func(s *corev1.Secret) {
			s.Data["config"] = []byte(`{"bearerToken":"b"}`)
			s.ResourceVersion = "2"
		}), wantNoList: true},
		{name: "an annotation changed: the sources copying it", before: eu(nil),
			after: eu(func(s *corev1.Secret) { s.Annotations = map[string]string{"example.com/cell": "8"} }),
			want:  []string{"shop/eu-cells"}},
		{name: "server changed: every source selecting it", before: eu(nil),
			after: eu(func(s *corev1.Secret) { s.Data["server"] = []byte("https://c1b") }),
			want:  []string{"pay/everything", "shop/eu", "shop/eu-cells"}},
		{name: "moved from eu to us: the sources it leaves and enters", before: eu(nil),
			after: regionSecret("argocd", "us", nil),
			want:  []string{"pay/everything", "pay/us", "shop/eu", "shop/eu-cells"}},
		{name: "created", after: eu(nil), want: []string{"pay/everything", "shop/eu", "shop/eu-cells"}},
		{name: "deleted", before: regionSecret("argocd", "us", nil), want: []string{"pay/everything", "pay/us"}},
		{name: "created in another inventory namespace", after: regionSecret("argocd-2", "eu", nil),
			want: []string{"pay/other-namespace"}},
		{name: "created in a namespace no source reads", after: regionSecret("elsewhere", "eu", nil)},
		{name: "no server before or after", before: eu(func(s *corev1.Secret) { delete(s.Data, "server") }),
			after: eu(func(s *corev1.Secret) { delete(s.Data, "server"); s.Data["config"] = []byte("b") }), wantNoList: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := apiruntime.NewScheme()
			require.NoError(t, fleetv1alpha1.AddToScheme(s))
			var lists atomic.Int32
			c := fake.NewClientBuilder().WithScheme(s).WithObjects(fleets...).
				WithIndex(&fleetv1alpha1.FleetStage{}, inventoryIndex, func(o client.Object) []string {
					return inventoryKeys(kinds, o.(*fleetv1alpha1.FleetStage))
				}).
				WithInterceptorFuncs(interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, l client.ObjectList, opts ...client.ListOption) error {
					lists.Add(1)
					return c.List(ctx, l, opts...)
				}}).Build()
			k, _ := kinds.Get(fleetv1alpha1.ArgoCDClusterSource)
			h := inventoryHandler{kind: k, fleets: c}
			q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
			defer q.ShutDown()
			ctx := context.Background()
			switch {
			case tt.before == nil:
				h.Create(ctx, event.CreateEvent{Object: tt.after}, q)
			case tt.after == nil:
				h.Delete(ctx, event.DeleteEvent{Object: tt.before}, q)
			default:
				h.Update(ctx, event.UpdateEvent{ObjectOld: tt.before, ObjectNew: tt.after}, q)
			}
			got := map[string]bool{}
			for q.Len() > 0 {
				req, _ := q.Get()
				got[req.String()] = true
				q.Done(req)
			}
			require.Equal(t, tt.want, nilIfEmpty(slices.Sorted(maps.Keys(got))))
			if tt.wantNoList {
				require.Zero(t, lists.Load(), "an update that changes no projection lists no FleetStage")
			}
		})
	}
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

func Test_inventoryKeys(t *testing.T) {
	t.Parallel()
	fs := testutil.MakeFleetStage("shop", "prod").Obj()
	other := argoSource("eu")
	other.Namespace = "argocd-2"
	fs.Spec.Targets.Sources = []fleetv1alpha1.TargetSource{argoSource("eu"), other,
		{Kind: fleetv1alpha1.KargoTargetSource}, {Kind: fleetv1alpha1.InlineSource}, {Kind: "Unknown"}}
	require.Equal(t, []string{"ArgoCDCluster/argocd", "ArgoCDCluster/argocd-2", "KargoTarget/shop"},
		inventoryKeys(inventory.DefaultKinds(), fs))
}

// Test_inventoryHandler_listedNamespace: a Kargo Target in a listed
// namespace queues the FleetStages of other Projects whose source reads
// that namespace, and not a FleetStage of its namespace reading another
// kind.
func Test_inventoryHandler_listedNamespace(t *testing.T) {
	t.Parallel()
	kinds := inventory.DefaultKinds()
	reading := testutil.MakeFleetStage("pay", "reads-argocd").Obj()
	reading.Spec.Targets.Sources = []fleetv1alpha1.TargetSource{{Kind: fleetv1alpha1.KargoTargetSource, Namespace: "argocd"}}
	own := testutil.MakeFleetStage("argocd", "reads-own").Obj()
	own.Spec.Targets.Sources = []fleetv1alpha1.TargetSource{{Kind: fleetv1alpha1.ArgoCDClusterSource}}
	s := apiruntime.NewScheme()
	require.NoError(t, fleetv1alpha1.AddToScheme(s))
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(reading, own).
		WithIndex(&fleetv1alpha1.FleetStage{}, inventoryIndex, func(o client.Object) []string {
			return inventoryKeys(kinds, o.(*fleetv1alpha1.FleetStage))
		}).Build()
	k, _ := kinds.Get(fleetv1alpha1.KargoTargetSource)
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	inventoryHandler{kind: k, fleets: c}.Create(context.Background(),
		event.CreateEvent{Object: &kargo.Target{ObjectMeta: metav1.ObjectMeta{Namespace: "argocd", Name: "store-1"}}}, q)
	require.Equal(t, 1, q.Len())
	req, _ := q.Get()
	require.Equal(t, client.ObjectKeyFromObject(reading), req.NamespacedName)
}
