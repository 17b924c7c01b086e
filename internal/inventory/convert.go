package inventory

import (
	"bytes"
	"cmp"
	"encoding/json"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
)

// Params set from inventory data. Per-target templates read them as
// ${{ vars.server }} and so on.
const (
	// ParamServer is an Argo CD cluster's API server URL.
	ParamServer = "server"
	// ParamProject is the Argo CD project a cluster is scoped to, when set.
	ParamProject = "project"
	// ParamDisplayName is a ClusterProfile's display name, when set.
	ParamDisplayName = "displayName"
	// ParamClusterManager is the manager of a ClusterProfile's cluster.
	ParamClusterManager = "clusterManager"
	// ParamKubernetesVersion is a ClusterProfile's reported Kubernetes version.
	ParamKubernetesVersion = "kubernetesVersion"
)

// ArgoCDSecretTypeLabel and ArgoCDSecretTypeCluster identify Argo CD cluster
// Secrets.
const (
	ArgoCDSecretTypeLabel   = "argocd.argoproj.io/secret-type"
	ArgoCDSecretTypeCluster = "cluster"
)

// SkippedObject is an inventory object that could not become a target.
type SkippedObject struct {
	// Source is the inventory kind.
	Source fleetv1alpha1.TargetSourceKind
	// Namespace and Name identify the object.
	Namespace, Name string
	// Reason says why it was skipped.
	Reason string
}

// FromArgoCDSecrets turns Argo CD cluster Secrets into targets
// (ProjectArgoCDSecret), sorted by ID, and reports the Secrets that cannot
// become one.
func FromArgoCDSecrets(secrets []corev1.Secret, annotations []string) ([]plan.Target, []SkippedObject) {
	return targetsOf(projectAll(secrets, ProjectArgoCDSecret), annotations)
}

// ProjectArgoCDSecret returns what of an Argo CD cluster Secret its target
// is built from. The target's name is the Secret's `name` data key (as Argo
// CD shows it), or the Secret's name when that is empty; params hold
// `server` and, when set, `project`. No other data key is read: connection
// credentials (`config`) and anything else a cluster Secret holds never
// reach a target. A Secret without `server` is skipped: Argo CD cannot use
// it either.
func ProjectArgoCDSecret(s *corev1.Secret) Projection {
	p := Projection{Source: fleetv1alpha1.ArgoCDClusterSource, Namespace: s.Namespace, Object: s.Name,
		Labels: s.Labels, Annotations: s.Annotations}
	server := string(s.Data["server"])
	if server == "" {
		p.Skip = "cluster Secret has no server"
		return p
	}
	p.Name = string(s.Data["name"])
	if p.Name == "" {
		p.Name = s.Name
	}
	p.Params = map[string]string{ParamServer: server}
	if project := string(s.Data["project"]); project != "" {
		p.Params[ParamProject] = project
	}
	return p
}

// FromKargoTargets turns Kargo Target objects into targets
// (ProjectKargoTarget), sorted by ID.
func FromKargoTargets(objs []kargo.Target, annotations []string) []plan.Target {
	targets, _ := targetsOf(projectAll(objs, ProjectKargoTarget), annotations)
	return targets
}

// ProjectKargoTarget returns what of a Kargo Target object its target is
// built from: its name, labels and params. A JSON string param becomes its
// value; any other JSON value (number, boolean, list, object) its compact
// JSON text, since target params are Stage variables, which are strings.
func ProjectKargoTarget(o *kargo.Target) Projection {
	params := make(map[string]string, len(o.Spec.Params))
	for k, v := range o.Spec.Params {
		params[k] = jsonParam(v.Raw)
	}
	return Projection{Source: fleetv1alpha1.KargoTargetSource, Namespace: o.Namespace, Object: o.Name, Name: o.Name,
		Labels: o.Labels, Params: params, Annotations: o.Annotations}
}

// FromClusterProfiles turns ClusterProfiles into targets
// (ProjectClusterProfile), sorted by ID.
func FromClusterProfiles(objs []ClusterProfile, annotations []string) []plan.Target {
	targets, _ := targetsOf(projectAll(objs, ProjectClusterProfile), annotations)
	return targets
}

// ProjectClusterProfile returns what of a ClusterProfile its target is
// built from: the target is named after the object, and params hold every
// status property by name, the display name, the cluster manager and the
// Kubernetes version when set. A property named like one of those fields is
// overridden by the field. Nothing else of the status (its conditions,
// which the cluster manager refreshes) reaches a target.
func ProjectClusterProfile(o *ClusterProfile) Projection {
	params := make(map[string]string, len(o.Status.Properties)+3)
	for _, p := range o.Status.Properties {
		params[p.Name] = p.Value
	}
	setIfNotEmpty(params, ParamDisplayName, o.Spec.DisplayName)
	setIfNotEmpty(params, ParamClusterManager, o.Spec.ClusterManager.Name)
	setIfNotEmpty(params, ParamKubernetesVersion, o.Status.Version.Kubernetes)
	return Projection{Source: fleetv1alpha1.ClusterProfileSource, Namespace: o.Namespace, Object: o.Name, Name: o.Name,
		Labels: o.Labels, Params: params, Annotations: o.Annotations}
}

// projectAll projects every object of a list's items.
func projectAll[T any](items []T, project func(*T) Projection) []Projection {
	out := make([]Projection, len(items))
	for i := range items {
		out[i] = project(&items[i])
	}
	return out
}

// FromInline turns the inline targets of a FleetStage spec into targets.
func FromInline(items []fleetv1alpha1.InlineTarget) []plan.Target {
	targets := make([]plan.Target, 0, len(items))
	for i := range items {
		t := &items[i]
		targets = append(targets, newTarget(fleetv1alpha1.InlineSource, t.Name, t.Labels, maps.Clone(t.Params)))
	}
	return sortTargets(targets)
}

// newTarget builds a target. Labels are copied: the objects usually come
// from an informer cache, which must never be modified, and the plan keeps
// its targets for as long as a rollout runs.
func newTarget(source fleetv1alpha1.TargetSourceKind, name string, labels, params map[string]string) plan.Target {
	if len(params) == 0 {
		params = nil
	}
	return plan.Target{
		ID:     plan.TargetID(name),
		Name:   name,
		Source: string(source),
		Labels: maps.Clone(labels),
		Params: params,
	}
}

// withAnnotations copies the listed annotations of an object into params.
// Inventory data wins over an annotation of the same key. Reserved
// annotations (kubectl.kubernetes.io/) are never copied: the admission
// webhook refuses to list them, and FleetStages stored before it did must
// not leak them either.
func withAnnotations(params, objectAnnotations map[string]string, keys []string) map[string]string {
	for _, key := range keys {
		if IsReservedAnnotation(key) {
			continue
		}
		v, ok := objectAnnotations[key]
		if !ok {
			continue
		}
		if _, taken := params[key]; !taken {
			params[key] = v
		}
	}
	return params
}

func setIfNotEmpty(m map[string]string, key, value string) {
	if value != "" {
		m[key] = value
	}
}

// jsonParam renders a JSON value as a Stage variable value.
func jsonParam(raw []byte) string {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s
	}
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return ""
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err == nil {
		return compact.String()
	}
	return string(raw)
}

// sortTargets orders targets by ID, then name, so a source's output does not
// depend on list order.
func sortTargets(ts []plan.Target) []plan.Target {
	slices.SortFunc(ts, func(a, b plan.Target) int {
		return cmp.Or(cmp.Compare(a.ID, b.ID), cmp.Compare(a.Name, b.Name))
	})
	return ts
}
