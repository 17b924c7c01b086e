package argocd

import (
	"fmt"
	"regexp"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// AppProjectKind is Argo CD's AppProject kind.
const AppProjectKind = "AppProject"

// DefaultProject is the AppProject of an Application that names none.
const DefaultProject = "default"

// InClusterServer is the server URL of the cluster Argo CD runs in, which
// needs no cluster Secret.
const InClusterServer = "https://kubernetes.default.svc"

// InClusterName is the name of that cluster.
const InClusterName = "in-cluster"

// AppProject holds the fields of an Argo CD AppProject kargo-fleet reads.
type AppProject struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              AppProjectSpec `json:"spec,omitempty"`
}

// AppProjectSpec lists what Applications of the project may use.
type AppProjectSpec struct {
	SourceRepos  []string      `json:"sourceRepos,omitempty"`
	Destinations []Destination `json:"destinations,omitempty"`
}

// ProjectFromUnstructured decodes an AppProject read as an unstructured
// object.
func ProjectFromUnstructured(obj map[string]any) (*AppProject, error) {
	p := &AppProject{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, p); err != nil {
		return nil, fmt.Errorf("error reading Argo CD AppProject: %w", err)
	}
	return p, nil
}

// ProjectName returns the Application's AppProject.
func (a *Application) ProjectName() string {
	if a.Spec.Project == "" {
		return DefaultProject
	}
	return a.Spec.Project
}

// RepoURLs returns the repositories of the Application's sources.
func (a *Application) RepoURLs() []string {
	var out []string
	if a.Spec.Source != nil {
		out = append(out, a.Spec.Source.RepoURL)
	}
	for _, s := range a.Spec.Sources {
		out = append(out, s.RepoURL)
	}
	return out
}

// Permits returns why the project refuses the Application's destination or
// one of its sources, as Argo CD decides (glob patterns, "!" entries
// deny); nil when it permits them.
func (p *AppProject) Permits(app *Application) error {
	d := app.Spec.Destination
	// An Application without a destination is refused by Argo CD itself
	// (InvalidSpecError): no project rule applies to it.
	if (d.Server != "" || d.Name != "") && !permitted(p.Spec.Destinations, func(e Destination) (bool, bool) {
		server, neg := strings.CutPrefix(e.Server, "!")
		name, negName := strings.CutPrefix(e.Name, "!")
		ns, negNS := strings.CutPrefix(e.Namespace, "!")
		clusterOK := (e.Server != "" && d.Server != "" && Glob(server, d.Server)) || (e.Name != "" && d.Name != "" && Glob(name, d.Name))
		return clusterOK && Glob(ns, d.Namespace), neg || negName || negNS
	}) {
		return fmt.Errorf("AppProject %s does not permit destination %s, namespace %q", p.Name, destinationName(d), d.Namespace)
	}
	for _, repo := range app.RepoURLs() {
		if !permittedRepo(p.Spec.SourceRepos, repo) {
			return fmt.Errorf("AppProject %s does not permit source repository %s", p.Name, repo)
		}
	}
	return nil
}

// permitted reports whether some allowing entry matches and no denying
// one does; match returns whether an entry matches and whether it denies.
func permitted(entries []Destination, match func(Destination) (bool, bool)) bool {
	allowed := false
	for _, e := range entries {
		ok, deny := match(e)
		switch {
		case ok && deny:
			return false
		case ok:
			allowed = true
		}
	}
	return allowed
}

func permittedRepo(patterns []string, repo string) bool {
	allowed := false
	for _, p := range patterns {
		pattern, deny := strings.CutPrefix(p, "!")
		if !Glob(pattern, repo) {
			continue
		}
		if deny {
			return false
		}
		allowed = true
	}
	return allowed
}

func destinationName(d Destination) string {
	if d.Server != "" {
		return d.Server
	}
	return "cluster " + d.Name
}

// Glob reports whether s matches pattern, where "*" matches any run of
// characters and "?" one, as Argo CD's project patterns do.
func Glob(pattern, s string) bool {
	var b strings.Builder
	b.WriteString("^")
	for _, r := range pattern {
		switch r {
		case '*':
			b.WriteString(".*")
		case '?':
			b.WriteString(".")
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	b.WriteString("$")
	ok, err := regexp.MatchString(b.String(), s)
	return err == nil && ok
}

// ComparisonProblem returns the message of an Application condition that
// says Argo CD cannot compare or deploy it (the destination cluster
// unreachable or unknown, an invalid spec); "" when none does.
func (a *Application) ComparisonProblem() string {
	for _, c := range a.Status.Conditions {
		if strings.HasSuffix(c.Type, "Error") {
			return c.Type + ": " + c.Message
		}
	}
	return ""
}
