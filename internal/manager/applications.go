package manager

import (
	"context"
	"fmt"
	"slices"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/kargo-fleet/kargo-fleet/internal/argocd"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// authorizedProjectIndex indexes cached Applications by every Project
// their kargo.akuity.io/authorized-stage names a Stage of: a version
// refresh reads a fleet's Applications with one lookup, whatever the
// number of its targets.
const authorizedProjectIndex = "kargo-fleet.authorizedProject"

// applicationGVK is Argo CD's Application kind.
var applicationGVK = argocd.GroupVersion.WithKind(argocd.ApplicationKind)

// applicationCache is a cache of the Argo CD Applications in the listed
// namespaces, read as unstructured objects (kargo-fleet depends on no Argo
// CD module) and indexed by the Stages they authorize.
type applicationCache struct{ cache.Cache }

// GetCache makes the manager start the cache with its own caches.
func (c applicationCache) GetCache() cache.Cache { return c.Cache }

// newApplicationCache returns the cache of the Applications in namespaces,
// added to the manager; nil when no namespace is listed or the cluster
// serves no Application kind (checked once, at start).
func newApplicationCache(mgr ctrl.Manager, namespaces []string) (*applicationCache, error) {
	if len(namespaces) == 0 {
		return nil, nil
	}
	if _, err := mgr.GetRESTMapper().RESTMapping(schema.GroupKind{Group: argocd.GroupVersion.Group, Kind: argocd.ApplicationKind},
		argocd.GroupVersion.Version); err != nil {
		if meta.IsNoMatchError(err) {
			ctrl.Log.WithName("setup").Info("The cluster serves no Argo CD Application kind: targets' Applications are not read")
			return nil, nil
		}
		return nil, fmt.Errorf("error looking up the Argo CD Application kind: %w", err)
	}
	readable, err := readableNamespaces(mgr.GetConfig(), namespaces)
	if err != nil {
		return nil, err
	}
	if len(readable) == 0 {
		// An informer the API server refuses never syncs, and a read of
		// it would wait for ever: no Applications rather than no drift.
		ctrl.Log.WithName("setup").Info("This controller may not list and watch Argo CD Applications in any of "+
			"--argocd-namespaces: targets' Applications are not read (the chart grants it in controller.argocdNamespaces)",
			"namespaces", namespaces)
		return nil, nil
	}
	o := cache.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(), DefaultTransform: cache.TransformStripManagedFields(),
		DefaultNamespaces: map[string]cache.Config{}}
	for _, ns := range readable {
		o.DefaultNamespaces[ns] = cache.Config{}
	}
	c, err := cache.New(mgr.GetConfig(), o)
	if err != nil {
		return nil, fmt.Errorf("error creating the cache of Argo CD Applications: %w", err)
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(applicationGVK)
	if err := c.IndexField(context.Background(), u, authorizedProjectIndex, authorizedProjectsOf); err != nil {
		return nil, fmt.Errorf("error indexing Argo CD Applications: %w", err)
	}
	ac := &applicationCache{c}
	if err := mgr.Add(*ac); err != nil {
		return nil, fmt.Errorf("error adding the cache of Argo CD Applications: %w", err)
	}
	return ac, nil
}

// authorizedStagesOf returns the Stages an Application authorizes, as
// Kargo parses the annotation; none when Kargo would refuse it.
func authorizedStagesOf(obj client.Object) []types.NamespacedName {
	entries, err := kargo.AuthorizedStages(obj.GetAnnotations()[kargo.AuthorizedStageAnnotation])
	if err != nil {
		return nil
	}
	return entries
}

// authorizedProjectsOf returns the Projects of the Stages an Application
// authorizes.
func authorizedProjectsOf(obj client.Object) []string {
	var out []string
	for _, e := range authorizedStagesOf(obj) {
		if !slices.Contains(out, e.Namespace) {
			out = append(out, e.Namespace)
		}
	}
	return out
}

// readableNamespaces returns the namespaces where this controller may list
// and watch Applications, asking the API server (SelfSubjectAccessReview,
// which every authenticated identity may create).
func readableNamespaces(cfg *rest.Config, namespaces []string) ([]string, error) {
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return nil, fmt.Errorf("error creating a client for access reviews: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []string
	for _, ns := range namespaces {
		allowed := true
		for _, verb := range []string{"list", "watch"} {
			review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
				ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb,
					Group: argocd.GroupVersion.Group, Resource: "applications"}}}
			if err := c.Create(ctx, review); err != nil {
				return nil, fmt.Errorf("error reviewing access to Argo CD Applications in %q: %w", ns, err)
			}
			allowed = allowed && review.Status.Allowed
		}
		if !allowed {
			ctrl.Log.WithName("setup").Info("This controller may not list and watch Argo CD Applications here: "+
				"they are not read", "namespace", ns)
			continue
		}
		out = append(out, ns)
	}
	return out, nil
}

// readTimeout bounds one read of the Applications: an informer that has
// not synced makes a read wait, and the version refresh must go on.
const readTimeout = 10 * time.Second

// InProject implements versions.Applications: one read of the cache's
// index, then the Applications sorted by the Stage of project they
// authorize.
func (c applicationCache) InProject(ctx context.Context, project string) (map[string][]*argocd.Application, error) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(argocd.GroupVersion.WithKind(argocd.ApplicationListKind))
	if err := c.List(ctx, list, client.MatchingFields{authorizedProjectIndex: project}); err != nil {
		return nil, fmt.Errorf("error listing the Argo CD Applications of Project %s: %w", project, err)
	}
	out := map[string][]*argocd.Application{}
	for i := range list.Items {
		app, err := argocd.FromUnstructured(list.Items[i].Object)
		if err != nil {
			return nil, err
		}
		for _, e := range authorizedStagesOf(&list.Items[i]) {
			if e.Namespace == project && !slices.Contains(out[e.Name], app) {
				out[e.Name] = append(out[e.Name], app)
			}
		}
	}
	return out, nil
}

// Source implements versions.Applications.
func (c applicationCache) Source(toFleets handler.MapFunc) source.Source {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(applicationGVK)
	return source.Kind[client.Object](c.Cache, u, handler.EnqueueRequestsFromMapFunc(toFleets))
}
