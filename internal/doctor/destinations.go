package doctor

import (
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/argocd"
	"github.com/kargo-fleet/kargo-fleet/internal/inventory"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// checkArgoCDDestinations checks, for every target's Applications that
// authorize its Stage, that Argo CD can deploy them: their AppProject
// exists and permits their destination and sources, their destination
// cluster is registered, and no condition says Argo CD cannot reach or
// compare it. What argocd-apps reports (missing, unauthorized) is not
// repeated.
func (d *Doctor) checkArgoCDDestinations(ctx context.Context, fs *fleetv1alpha1.FleetStage, targets []kargo.Stage) Result {
	apps := map[string]*Applications{}
	projects := map[string]*argocd.AppProject{}
	projectsServed := true
	clusters := map[string]Clusters{}
	var problems []string
	checked := 0
	for i := range targets {
		st := &targets[i]
		refs, _ := targetAppRefs(fs, st)
		for _, ref := range refs {
			ns := ref.Namespace
			if _, read := apps[ns]; !read {
				list, err := d.listApplications(ctx, ns)
				if isNoMatch(err) {
					return ok(CheckArgoCDDest, "this cluster serves no Argo CD Application kind: destinations not checked")
				}
				if err != nil {
					return warn(CheckArgoCDDest, "grant this user list on applications.argoproj.io in "+ns,
						"error listing Argo CD Applications in namespace %q: %v", ns, err)
				}
				apps[ns] = NewApplications(list)
				if clusters[ns], err = d.clusters(ctx, ns); err != nil {
					return warn(CheckArgoCDDest, "grant this user list on secrets in "+ns, "error listing Argo CD cluster Secrets in %q: %v", ns, err)
				}
			}
			var mine []AppMeta
			for _, m := range apps[ns].match(ref) {
				if kargo.AuthorizeStage(m.Annotations, types.NamespacedName{Namespace: ns, Name: m.Name}, fs.Namespace, st.Name) == nil {
					mine = append(mine, m)
				}
			}
			for _, m := range mine {
				key := ns + "/" + m.App.ProjectName()
				if _, read := projects[key]; read {
					continue
				}
				p, err := d.appProject(ctx, ns, m.App.ProjectName())
				switch {
				case errors.Is(err, errNoAppProjectKind):
					projectsServed = false
				case err != nil:
					return warn(CheckArgoCDDest, "grant this user get on appprojects.argoproj.io in "+ns, "%v", err)
				}
				projects[key] = p
			}
			checked += len(mine)
			known := projects
			if !projectsServed {
				known = nil
			}
			problems = append(problems, DestinationProblems(ns, mine, known, clusters[ns])...)
		}
	}
	slices.Sort(problems)
	problems = slices.Compact(problems)
	switch {
	case len(problems) > 0:
		return fail(CheckArgoCDDest, "fix the AppProject, register the cluster (an Argo CD cluster Secret) or bring it back; "+
			"Argo CD's Application conditions say more", "%d problem(s) keep Argo CD from deploying target Applications: %s",
			len(problems), examples(problems))
	case checked == 0:
		return ok(CheckArgoCDDest, "no target Application to check")
	}
	return ok(CheckArgoCDDest, "the %d target Application(s) have their AppProject's permission and a registered, reachable destination", checked)
}

// errNoAppProjectKind says the cluster serves no AppProject kind.
var errNoAppProjectKind = errors.New("the cluster serves no Argo CD AppProject kind")

// appProject reads an AppProject; nil when it does not exist.
func (d *Doctor) appProject(ctx context.Context, namespace, name string) (*argocd.AppProject, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(argocd.GroupVersion.WithKind(argocd.AppProjectKind))
	switch err := d.c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, u); {
	case isNoMatch(err):
		return nil, errNoAppProjectKind
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("error reading AppProject %s/%s: %w", namespace, name, err)
	}
	return argocd.ProjectFromUnstructured(u.Object)
}

// clusters returns the clusters the Argo CD cluster Secrets of a namespace
// register.
func (d *Doctor) clusters(ctx context.Context, namespace string) (Clusters, error) {
	list := &corev1.SecretList{}
	if err := d.c.List(ctx, list, client.InNamespace(namespace),
		client.MatchingLabels{inventory.ArgoCDSecretTypeLabel: inventory.ArgoCDSecretTypeCluster}); err != nil {
		return Clusters{}, err
	}
	c := Clusters{Servers: map[string]bool{}, Names: map[string]bool{}}
	for i := range list.Items {
		s := &list.Items[i]
		c.Servers[string(s.Data["server"])] = true
		c.Names[string(s.Data["name"])] = true
	}
	return c, nil
}
