package doctor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"slices"
	"time"

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
	// servers maps each registered destination server to its Applications.
	servers := map[string][]string{}
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
			for _, m := range mine {
				if server := clusters[ns].Server(m.App.Spec.Destination); server != "" {
					servers[server] = append(servers[server], ns+"/"+m.Name)
				}
			}
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
	if silent := unreachable(ctx, servers); len(silent) > 0 {
		return warn(CheckArgoCDDest, "bring the cluster back, or check that Argo CD reaches it (doctor connects from where it runs, "+
			"which may not be Argo CD's network); Argo CD marks its Applications only at their next refresh",
			"%d destination cluster(s) of target Applications did not answer a connection from here: %s",
			len(silent), examples(silent))
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
	c := Clusters{Servers: map[string]bool{}, Names: map[string]bool{}, ServerOf: map[string]string{}}
	for i := range list.Items {
		s := &list.Items[i]
		c.Servers[string(s.Data["server"])] = true
		c.Names[string(s.Data["name"])] = true
		c.ServerOf[string(s.Data["name"])] = string(s.Data["server"])
	}
	return c, nil
}

// dialTimeout bounds the connection to one destination cluster.
const dialTimeout = 3 * time.Second

// unreachable connects to each destination server (TCP, its URL's host
// and port) and returns those that do not answer, with their
// Applications: Argo CD reports a stopped cluster on its Applications only
// after its next refresh, minutes later, with what it cached shown as
// Synced and Healthy meanwhile.
func unreachable(ctx context.Context, servers map[string][]string) []string {
	var out []string
	for _, server := range slices.Sorted(maps.Keys(servers)) {
		apps := servers[server]
		u, err := url.Parse(server)
		if err != nil || u.Hostname() == "" {
			continue
		}
		port := u.Port()
		if port == "" {
			port = cmp.Or(map[string]string{"http": "80"}[u.Scheme], "443")
		}
		dctx, cancel := context.WithTimeout(ctx, dialTimeout)
		conn, err := (&net.Dialer{}).DialContext(dctx, "tcp", net.JoinHostPort(u.Hostname(), port))
		cancel()
		if err != nil {
			out = append(out, fmt.Sprintf("%s (%d Application(s), e.g. %s): %v", server, len(apps), apps[0], err))
			continue
		}
		_ = conn.Close()
	}
	return out
}
