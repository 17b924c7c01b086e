package manager

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/inventory"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// NewScheme returns a scheme with every kind the controller reads or writes.
func NewScheme() *apiruntime.Scheme {
	s := apiruntime.NewScheme()
	for _, add := range []func(*apiruntime.Scheme) error{
		clientgoscheme.AddToScheme, fleetv1alpha1.AddToScheme, kargo.AddToScheme, inventory.AddToScheme,
	} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}

// CacheOptions returns the manager's cache options. Inventory objects are
// cached as the inventory kinds table says: only those carrying the kind's
// required labels, and for a kind read from listed namespaces only, only in
// listedNamespaces. So Secrets are cached only when they are Argo CD cluster
// Secrets in the namespaces where the controller may read Secrets, never the
// cluster's other Secrets. No cached object keeps its managedFields, which
// nothing here reads and which make up a third to a half of a Stage, a
// Promotion or a Freight held by thousands of Stages.
func CacheOptions(listedNamespaces []string) cache.Options {
	byObject := map[client.Object]cache.ByObject{
		&kargo.Promotion{}: {Transform: slimPromotion},
		&kargo.Stage{}:     {Transform: slimStage},
		&kargo.Freight{}:   {Transform: slimFreight},
	}
	for _, k := range inventory.DefaultKinds() {
		if !k.ReadsObjects() || (len(k.RequiredLabels) == 0 && !k.ListedNamespacesOnly) {
			continue
		}
		var by cache.ByObject
		if len(k.RequiredLabels) > 0 {
			by.Label = labels.SelectorFromSet(k.RequiredLabels)
		}
		if k.ListedNamespacesOnly {
			by.Namespaces = map[string]cache.Config{}
			for _, ns := range listedNamespaces {
				by.Namespaces[ns] = cache.Config{}
			}
		}
		byObject[k.Object] = by
	}
	return cache.Options{DefaultTransform: cache.TransformStripManagedFields(), ByObject: byObject}
}

// secretCache is a cache of Secrets of one name the manager starts with its
// own caches, before the controllers and the step server.
type secretCache struct{ cache.Cache }

// GetCache makes the manager start the cache with its own caches.
func (c secretCache) GetCache() cache.Cache { return c.Cache }

// namedSecretCache returns a cache, added to the manager, of the Secrets
// named name in namespace ("" for every namespace). Its list and watch
// select the name, which RBAC authorizes with resourceNames: the controller
// needs no right to read other Secrets.
func namedSecretCache(mgr ctrl.Manager, namespace, name string) (cache.Cache, error) {
	o := cache.Options{
		Scheme:           mgr.GetScheme(),
		Mapper:           mgr.GetRESTMapper(),
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Secret{}: {Field: fields.OneTermEqualSelector("metadata.name", name)},
		},
	}
	if namespace != "" {
		o.DefaultNamespaces = map[string]cache.Config{namespace: {}}
	}
	c, err := cache.New(mgr.GetConfig(), o)
	if err != nil {
		return nil, fmt.Errorf("error creating the cache of Secret %q: %w", name, err)
	}
	if err := mgr.Add(secretCache{c}); err != nil {
		return nil, fmt.Errorf("error adding the cache of Secret %q: %w", name, err)
	}
	return c, nil
}

// slimStage keeps of a cached Stage its metadata, spec and the status
// kargo-fleet reads (health, conditions, the current and previous Freight
// with their latest verification), and drops older Freight history and the
// Promotion statuses Kargo copies into it: a fleet holds one Stage per
// target, and the FleetStage controller compares only their specs.
func slimStage(obj any) (any, error) {
	s, ok := obj.(*kargo.Stage)
	if !ok {
		return obj, nil
	}
	s.ManagedFields = nil
	st := &s.Status
	if len(st.FreightHistory) > 2 {
		st.FreightHistory = st.FreightHistory[:2]
	}
	for i := range st.FreightHistory {
		if h := st.FreightHistory[i].VerificationHistory; len(h) > 1 {
			st.FreightHistory[i].VerificationHistory = h[:1]
		}
	}
	for _, p := range []*kargo.PromotionReference{st.LastPromotion, st.CurrentPromotion} {
		if p != nil {
			p.Status = nil
		}
	}
	return s, nil
}

// slimFreight keeps of a cached Freight everything but the Stages Kargo
// records it in and verified in: the cached Freight is read only for its
// approvals (steps read Freight from the API server), and those two maps hold
// one entry per Stage of the Project, about 1 MiB at 10,000 target Stages.
func slimFreight(obj any) (any, error) {
	f, ok := obj.(*kargo.Freight)
	if !ok {
		return obj, nil
	}
	f.ManagedFields = nil
	f.Status.CurrentlyIn, f.Status.VerifiedIn = nil, nil
	return f, nil
}

// slimPromotion keeps of a cached Promotion what kargo-fleet reads (its
// metadata, Stage, Freight, phase and message) and drops the steps, vars,
// step state and execution records Kargo copies into every one of them: a
// fleet rollout holds one Promotion per target, and those parts are most
// of a Promotion's size.
func slimPromotion(obj any) (any, error) {
	p, ok := obj.(*kargo.Promotion)
	if !ok {
		return obj, nil
	}
	p.ManagedFields = nil
	p.Spec.Steps, p.Spec.Vars = nil, nil
	p.Status.StepExecutionMetadata, p.Status.State, p.Status.FreightCollection = nil, nil, nil
	return p, nil
}
