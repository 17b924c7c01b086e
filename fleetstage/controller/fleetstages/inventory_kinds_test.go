package fleetstages

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/fleetstage/webhook"
	"github.com/kargo-fleet/kargo-fleet/internal/inventory"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

// configMapClusters is a source kind no API enum or switch knows: labelled
// ConfigMaps, one target each, params from their data. It exists only as
// this table entry.
const configMapClusters fleetv1alpha1.TargetSourceKind = "ConfigMapCluster"

const configMapClusterLabel = "inventory.example.com/cluster"

func configMapClusterKind() inventory.Kind {
	return inventory.Kind{
		Name:        configMapClusters,
		Description: "cluster ConfigMaps",
		GVK:         corev1.SchemeGroupVersion.WithKind("ConfigMap"),
		Resource:    "configmaps",
		Object:      &corev1.ConfigMap{},
		List: inventory.ListOf(func() *corev1.ConfigMapList { return &corev1.ConfigMapList{} },
			func(cm *corev1.ConfigMap) inventory.Projection {
				return inventory.Projection{Source: configMapClusters, Namespace: cm.Namespace, Object: cm.Name,
					Name: cm.Name, Labels: cm.Labels, Params: cm.Data, Annotations: cm.Annotations}
			}),
		RequiredLabels: labels.Set{configMapClusterLabel: "true"},
		Optional:       true,
	}
}

// recordingAccess allows one user everything and records every review.
type recordingAccess struct {
	allowed string

	mu      sync.Mutex
	reviews []authorizationv1.ResourceAttributes
}

func (a *recordingAccess) Allowed(_ context.Context, u authenticationv1.UserInfo, attrs authorizationv1.ResourceAttributes) (bool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.reviews = append(a.reviews, attrs)
	return u.Username == a.allowed, nil
}

// recordingController records the sources it is asked to watch.
type recordingController struct {
	controller.Controller

	mu      sync.Mutex
	watched []string
}

func (c *recordingController) Watch(src source.TypedSource[reconcile.Request]) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.watched = append(c.watched, src.(interface{ String() string }).String())
	return nil
}

func (c *recordingController) sources() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.watched...)
}

func admissionAs(user string) context.Context {
	return admission.NewContextWithRequest(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UserInfo: authenticationv1.UserInfo{Username: user},
	}})
}

// TestInventoryKinds_aKindIsOneTableEntry adds a source kind through its
// table entry alone and sees it read, validated, access-reviewed and
// watched by the same code the controller and the webhook run.
func TestInventoryKinds_aKindIsOneTableEntry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	kinds := append(inventory.DefaultKinds(), configMapClusterKind())
	fs := testutil.MakeFleetStage("shop", "prod").Obj()
	fs.Spec.Targets.Sources = []fleetv1alpha1.TargetSource{{Kind: configMapClusters}}
	cm := func(ns, name string, cluster bool) *corev1.ConfigMap {
		o := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Data: map[string]string{"server": "https://" + name}}
		if cluster {
			o.Labels = map[string]string{configMapClusterLabel: "true"}
		}
		return o
	}
	s := apiruntime.NewScheme()
	require.NoError(t, corev1.AddToScheme(s))
	require.NoError(t, fleetv1alpha1.AddToScheme(s))
	require.NoError(t, kinds.AddToScheme(s))
	c := fake.NewClientBuilder().WithScheme(s).
		WithIndex(&fleetv1alpha1.FleetStage{}, inventoryIndex, func(o client.Object) []string {
			return inventoryKeys(kinds, o.(*fleetv1alpha1.FleetStage))
		}).
		WithObjects(fs,
			cm("shop", "eu-1", true), cm("shop", "eu-2", true), cm("shop", "settings", false), cm("elsewhere", "us-1", true),
		).Build()

	t.Run("read", func(t *testing.T) {
		t.Parallel()
		snap, err := inventory.NewReader(c).WithKinds(kinds).ReadSources(ctx, fs.Namespace, fs.Spec.Targets.Sources)
		require.NoError(t, err)
		cluster := map[string]string{configMapClusterLabel: "true"}
		require.Equal(t, []plan.Target{
			{ID: "eu-1", Name: "eu-1", Source: "ConfigMapCluster", Labels: cluster, Params: map[string]string{"server": "https://eu-1"}},
			{ID: "eu-2", Name: "eu-2", Source: "ConfigMapCluster", Labels: cluster, Params: map[string]string{"server": "https://eu-2"}},
		}, snap.Targets, "labelled ConfigMaps of the FleetStage's namespace only")

		_, err = inventory.NewReader(c).WithKinds(kinds).ReadSources(ctx, fs.Namespace,
			[]fleetv1alpha1.TargetSource{{Kind: configMapClusters, Namespace: "elsewhere"}})
		require.ErrorContains(t, err, `ConfigMapCluster source may not read namespace "elsewhere"`,
			"the namespace policy applies to the new kind")

		_, err = inventory.NewReader(c).ReadSources(ctx, fs.Namespace, fs.Spec.Targets.Sources)
		require.ErrorContains(t, err, `unknown kind "ConfigMapCluster"`, "without the entry the kind is unknown")
	})

	t.Run("validated and access-reviewed", func(t *testing.T) {
		t.Parallel()
		access := &recordingAccess{allowed: "alice"}
		v := webhook.NewFleetStageValidator(c, access, inventory.DefaultNamespacePolicy()).WithKinds(kinds)
		_, err := v.ValidateCreate(admissionAs("alice"), fs)
		require.NoError(t, err)
		// Besides the Stage rights every FleetStage needs, the author is
		// asked about the kind's resource in the namespace read.
		require.Contains(t, access.reviews,
			authorizationv1.ResourceAttributes{Namespace: "shop", Verb: "list", Group: "", Resource: "configmaps"},
			"the author is asked about the kind's resource in the namespace read")

		_, err = v.ValidateCreate(admissionAs("bob"), fs)
		require.ErrorContains(t, err,
			`spec.targets.sources[0].namespace: Forbidden: user "bob" may not list configmaps in namespace "shop"`)

		_, err = webhook.NewFleetStageValidator(c, access, inventory.DefaultNamespacePolicy()).
			ValidateCreate(admissionAs("alice"), fs)
		require.ErrorContains(t, err, `spec.targets.sources[0].kind: Unsupported value: "ConfigMapCluster"`,
			"without the entry the webhook refuses the kind")
	})

	t.Run("watched once served", func(t *testing.T) {
		t.Parallel()
		r := NewFleetStageReconciler(c, inventory.NewReader(c).WithKinds(kinds), nil, nil)
		_, optional := r.inventoryWatches(kinds)
		var watch *inventoryWatch
		for i := range optional {
			if optional[i].gvk.Kind == "ConfigMap" {
				watch = &optional[i]
			}
		}
		require.NotNil(t, watch, "an optional kind is watched once the cluster serves it")

		// Only labelled ConfigMaps pass, and a new one queues the
		// FleetStages whose source reads it.
		for _, p := range watch.predicates {
			require.False(t, p.Create(event.CreateEvent{Object: cm("shop", "settings", false)}))
			require.True(t, p.Create(event.CreateEvent{Object: cm("shop", "eu-3", true)}))
		}
		q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
		defer q.ShutDown()
		watch.handler.Create(ctx, event.CreateEvent{Object: cm("shop", "eu-3", true)}, q)
		require.Equal(t, 1, q.Len())
		req, _ := q.Get()
		require.Equal(t, client.ObjectKeyFromObject(fs), req.NamespacedName)

		// Discovery serves ConfigMaps but neither Kargo Targets nor
		// ClusterProfiles: only ConfigMaps are watched, and every FleetStage
		// is queued to read them.
		disc := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: []*metav1.APIResourceList{{
			GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "configmaps", Kind: "ConfigMap"}},
		}}}}
		ctrl := &recordingController{}
		events := make(chan event.GenericEvent)
		w := &optionalWatches{discovery: disc, cache: &informertest.FakeInformers{}, ctrl: ctrl, kinds: optional,
			fleetStages: r.allFleetStages, events: events, watched: map[schema.GroupVersionKind]bool{}}
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan error)
		go func() { done <- w.Start(runCtx) }()
		select {
		case e := <-events:
			require.Equal(t, fs.Name, e.Object.GetName())
		case <-time.After(10 * time.Second):
			t.Fatal("no FleetStage was queued after the kind turned up")
		}
		cancel()
		require.NoError(t, <-done)
		require.Equal(t, []string{"kind source: *v1.ConfigMap"}, ctrl.sources())
		require.True(t, w.isWatched(corev1.SchemeGroupVersion.WithKind("ConfigMap")))
		require.False(t, w.isWatched(kargo.GroupVersion.WithKind("Target")))
	})
}

// Test_inventoryWatches_defaultKinds: Argo CD cluster Secrets are watched
// from the start, Kargo Targets and ClusterProfiles once served; a Secret
// that is not an Argo CD cluster Secret queues nothing.
func Test_inventoryWatches_defaultKinds(t *testing.T) {
	t.Parallel()
	r := NewFleetStageReconciler(nil, nil, nil, nil)
	served, optional := r.inventoryWatches(inventory.DefaultKinds())
	kindsOf := func(ws []inventoryWatch) []string {
		var out []string
		for _, w := range ws {
			out = append(out, w.gvk.Kind)
		}
		return out
	}
	require.Equal(t, []string{"Secret"}, kindsOf(served))
	require.Equal(t, []string{"Target", "ClusterProfile"}, kindsOf(optional))
	require.Len(t, served[0].predicates, 1)
	repo := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{
		inventory.ArgoCDSecretTypeLabel: "repository"}}}
	cluster := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{
		inventory.ArgoCDSecretTypeLabel: inventory.ArgoCDSecretTypeCluster}}}
	require.False(t, served[0].predicates[0].Update(event.UpdateEvent{ObjectOld: repo, ObjectNew: repo}))
	require.True(t, served[0].predicates[0].Update(event.UpdateEvent{ObjectOld: cluster, ObjectNew: cluster}))
}
