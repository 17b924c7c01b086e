package helmchart

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	sigsyaml "sigs.k8s.io/yaml"
)

// rendered is a rendered release with typed accessors.
type rendered struct {
	objs []*unstructured.Unstructured
}

func (r rendered) deployment(t *testing.T) (*appsv1.Deployment, corev1.Container) {
	t.Helper()
	u := Find(r.objs, "Deployment", "")
	require.NotNil(t, u)
	d := &appsv1.Deployment{}
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, d, true))
	return d, d.Spec.Template.Spec.Containers[0]
}

func (r rendered) taskURLs(t *testing.T) map[string]string {
	t.Helper()
	return r.taskVar(t, "serverURL")
}

// taskVar returns the default of a var of every rendered task, by task.
func (r rendered) taskVar(t *testing.T, name string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, o := range r.objs {
		if o.GetKind() != "ClusterPromotionTask" {
			continue
		}
		vars, _, _ := unstructured.NestedSlice(o.Object, "spec", "vars")
		for _, v := range vars {
			if m := v.(map[string]any); m["name"] == name {
				out[o.GetName()] = m["value"].(string)
			}
		}
	}
	return out
}

func (r rendered) names(kind string) []string {
	var out []string
	for _, o := range r.objs {
		if o.GetKind() == kind {
			out = append(out, o.GetName())
		}
	}
	return out
}

func hasArg(c corev1.Container, prefix string) bool {
	for _, a := range c.Args {
		if strings.HasPrefix(a, prefix) {
			return true
		}
	}
	return false
}

func env(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

func TestRender(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		release    Release
		assertions func(*testing.T, rendered)
	}{
		{
			name:    "defaults without cert-manager: generated webhook certificates",
			release: Release{Name: "kargo-fleet", Namespace: "kargo-fleet"},
			assertions: func(t *testing.T, r rendered) {
				_, c := r.deployment(t)
				require.Contains(t, c.Args, "--webhook-cert-secret=kargo-fleet-webhook-tls")
				require.Contains(t, c.Args, "--webhook-configuration=kargo-fleet")
				require.Contains(t, c.Args, "--webhook-service=kargo-fleet-webhook")
				require.False(t, hasArg(c, "--step-server-url"), "the tasks' default URL is the release's Service")
				require.Equal(t, ":9090", env(c, "KARGO_FLEET_STEP_SERVER_ADDR"))
				require.Equal(t, "kargo-fleet-step-key", env(c, "KARGO_FLEET_STEP_SIGNING_KEY_SECRET"))
				for task, url := range r.taskURLs(t) {
					require.Equal(t, "https://kargo-fleet-steps.kargo-fleet.svc:9090", url, task, "the step server is TLS by default")
				}
				require.Len(t, r.taskURLs(t), 4)
				for task, skip := range r.taskVar(t, "insecureSkipTLSVerify") {
					require.Equal(t, "true", skip, task, "Kargo cannot verify a generated certificate by default")
				}
				require.Len(t, r.taskVar(t, "insecureSkipTLSVerify"), 4)
				require.Contains(t, c.Args, "--step-cert-secret=kargo-fleet-steps-tls")
				require.Contains(t, c.Args, "--step-service=kargo-fleet-steps")
				require.Equal(t, "/etc/kargo-fleet/steps-tls/tls.crt", env(c, "KARGO_FLEET_STEP_TLS_CERT_FILE"))
				require.Equal(t, "/etc/kargo-fleet/steps-tls/tls.key", env(c, "KARGO_FLEET_STEP_TLS_KEY_FILE"))
				require.Empty(t, r.names("Certificate"))
				require.Empty(t, r.names("ServiceMonitor"), "no monitoring.coreos.com/v1 in the cluster")
				require.Contains(t, r.names("ClusterRole"), "kargo-fleet-webhook-certs")
				require.Contains(t, r.names("PodDisruptionBudget"), "kargo-fleet")
				for _, crd := range []string{"fleetstages.fleet.kargo-fleet.io", "fleetrollouts.fleet.kargo-fleet.io"} {
					o := Find(r.objs, "CustomResourceDefinition", crd)
					require.NotNil(t, o, crd)
					require.Equal(t, "keep", o.GetAnnotations()["helm.sh/resource-policy"])
				}
				require.Contains(t, c.Args, "--inventory-namespaces=argocd")
				require.Contains(t, c.Args, "--metrics-secure=true", "metrics behind authentication by default")
				require.Contains(t, r.names("ClusterRole"), "kargo-fleet-metrics-reader")
				require.Contains(t, clusterRoleYAML(t, r), "- tokenreviews", "the metrics filter reviews tokens")
				np := yamlOf(t, Find(r.objs, "NetworkPolicy", ""))
				require.Contains(t, np, "kubernetes.io/metadata.name: kargo")
				require.Contains(t, np, "app.kubernetes.io/component: controller")
				require.Contains(t, np, "- from:\n    - namespaceSelector:", "the step port admits Kargo's controller only")
				clusterRole := clusterRoleYAML(t, r)
				require.Contains(t, clusterRole, "resourceNames:\n  - kargo-fleet-step-token\n  resources:\n  - secrets",
					"token Secrets are read, updated and deleted by name only")
				for _, o := range r.objs {
					if o.GetKind() != "ClusterRole" {
						continue
					}
					for _, rule := range rulesOf(t, o) {
						if slices.Contains(rule.Resources, "secrets") {
							require.True(t, len(rule.ResourceNames) > 0 || slices.Equal(rule.Verbs, []string{"create"}),
								"ClusterRole %s reads or writes any Secret: %v", o.GetName(), rule)
						}
					}
				}
				own := Find(r.objs, "Role", "-secrets")
				require.Equal(t, "kargo-fleet", own.GetNamespace(), "the key and webhook Secrets: release namespace only")
				inv := Find(r.objs, "Role", "-inventory")
				require.Equal(t, "argocd", inv.GetNamespace())
				require.Equal(t, []string{"get", "list", "watch"}, rulesOf(t, inv)[0].Verbs, "inventory Secrets are read only")
				require.Equal(t, "argocd", Find(r.objs, "RoleBinding", "-inventory").GetNamespace())
				le := Find(r.objs, "Role", "-leader-election")
				require.NotNil(t, le)
				require.Contains(t, yamlOf(t, le), "- events", "leader election records core Events")
				viewer := Find(r.objs, "ClusterRole", "-fleet-viewer")
				require.Equal(t, "true", viewer.GetLabels()["rbac.authorization.k8s.io/aggregate-to-view"])
				operator := Find(r.objs, "ClusterRole", "-fleet-operator")
				require.Equal(t, "true", operator.GetLabels()["rbac.authorization.k8s.io/aggregate-to-edit"])
				require.Empty(t, operator.GetLabels()["rbac.authorization.k8s.io/aggregate-to-view"])
			},
		},
		{
			name:    "other namespace and release name",
			release: Release{Name: "prod", Namespace: "platform"},
			assertions: func(t *testing.T, r rendered) {
				for _, o := range r.objs {
					if o.GetNamespace() != "" && !strings.HasSuffix(o.GetName(), "-inventory") {
						require.Equal(t, "platform", o.GetNamespace(), "%s %s", o.GetKind(), o.GetName())
					}
					if o.GetKind() != "CustomResourceDefinition" && o.GetKind() != "ClusterPromotionTask" {
						require.True(t, strings.HasPrefix(o.GetName(), "prod-kargo-fleet"), "%s %s", o.GetKind(), o.GetName())
					}
				}
				for task, url := range r.taskURLs(t) {
					require.Equal(t, "https://prod-kargo-fleet-steps.platform.svc:9090", url, task)
				}
				d, c := r.deployment(t)
				require.Equal(t, "prod-kargo-fleet", d.Spec.Template.Spec.ServiceAccountName)
				require.Contains(t, c.Args, "--webhook-service=prod-kargo-fleet-webhook")
				require.Contains(t, c.Args, "--step-service=prod-kargo-fleet-steps")
				require.Contains(t, yamlOf(t, Find(r.objs, "ClusterRoleBinding", "-controller")), "namespace: platform")
				require.Contains(t, yamlOf(t, Find(r.objs, "ValidatingWebhookConfiguration", "")), "name: prod-kargo-fleet-webhook")
			},
		},
		{
			name: "cert-manager and Prometheus Operator present",
			release: Release{Name: "kargo-fleet", Namespace: "kargo-fleet",
				APIVersions: []string{"cert-manager.io/v1", "monitoring.coreos.com/v1"}},
			assertions: func(t *testing.T, r rendered) {
				d, c := r.deployment(t)
				require.False(t, hasArg(c, "--webhook-cert-secret"))
				require.Equal(t, "kargo-fleet-webhook-tls", d.Spec.Template.Spec.Volumes[0].Secret.SecretName)
				require.Equal(t, []string{"kargo-fleet-webhook"}, r.names("Certificate"))
				require.Equal(t, []string{"kargo-fleet-selfsigned"}, r.names("Issuer"))
				require.Contains(t, yamlOf(t, Find(r.objs, "Certificate", "")), "secretName: kargo-fleet-webhook-tls")
				vwc := Find(r.objs, "ValidatingWebhookConfiguration", "")
				require.Equal(t, "kargo-fleet/kargo-fleet-webhook", vwc.GetAnnotations()["cert-manager.io/inject-ca-from"])
				require.Equal(t, []string{"kargo-fleet"}, r.names("ServiceMonitor"))
				sm := yamlOf(t, Find(r.objs, "ServiceMonitor", ""))
				require.Contains(t, sm, "scheme: https", "metrics are served over HTTPS by default")
				require.Contains(t, sm, "bearerTokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token")
				require.NotContains(t, r.names("ClusterRole"), "kargo-fleet-webhook-certs")
			},
		},
		{
			name: "own webhook Secret and CA bundle",
			release: Release{Name: "kargo-fleet", Namespace: "kargo-fleet", APIVersions: []string{"cert-manager.io/v1"},
				Values: map[string]any{"webhook": map[string]any{"certificates": "secret", "secretName": "my-tls", "caBundle": "Q0E="}}},
			assertions: func(t *testing.T, r rendered) {
				d, c := r.deployment(t)
				require.False(t, hasArg(c, "--webhook-cert-secret"))
				require.Equal(t, "my-tls", d.Spec.Template.Spec.Volumes[0].Secret.SecretName)
				require.Empty(t, r.names("Certificate"))
				require.Contains(t, yamlOf(t, Find(r.objs, "ValidatingWebhookConfiguration", "")), "caBundle: Q0E=")
			},
		},
		{
			name: "own step server Secret, verified by Kargo",
			release: Release{Name: "kargo-fleet", Namespace: "kargo-fleet", Values: map[string]any{"steps": map[string]any{
				"tls": map[string]any{"certificates": "secret", "secretName": "steps-tls", "verify": true}}}},
			assertions: func(t *testing.T, r rendered) {
				for task, url := range r.taskURLs(t) {
					require.Equal(t, "https://kargo-fleet-steps.kargo-fleet.svc:9090", url, task)
				}
				for task, skip := range r.taskVar(t, "insecureSkipTLSVerify") {
					require.Equal(t, "false", skip, task)
				}
				d, c := r.deployment(t)
				require.False(t, hasArg(c, "--step-cert-secret"), "the operator's Secret is mounted, not generated")
				require.Equal(t, "/etc/kargo-fleet/steps-tls/tls.crt", env(c, "KARGO_FLEET_STEP_TLS_CERT_FILE"))
				require.Equal(t, "/etc/kargo-fleet/steps-tls/tls.key", env(c, "KARGO_FLEET_STEP_TLS_KEY_FILE"))
				require.Contains(t, yamlOf(t, Find(r.objs, "Deployment", "")), "secretName: steps-tls")
				require.Len(t, d.Spec.Template.Spec.Volumes, 2)
			},
		},
		{
			name: "custom ports, step server URL and scheduling",
			release: Release{Name: "kargo-fleet", Namespace: "kargo-fleet", Values: map[string]any{
				"ports":   map[string]any{"steps": 19090, "webhook": 19443, "metrics": 18080, "probes": 18081},
				"service": map[string]any{"steps": 80, "metrics": 8443},
				"controller": map[string]any{"stepServerURL": "http://steps.example:80", "extraArgs": []any{"--pprof-bind-address=:6060"},
					"extraEnv": []any{map[string]any{"name": "FOO", "value": "bar"}}},
				"nodeSelector":      map[string]any{"pool": "system"},
				"tolerations":       []any{map[string]any{"key": "system", "operator": "Exists"}},
				"priorityClassName": "system-cluster-critical",
				"podAnnotations":    map[string]any{"a": "b"},
				"imagePullSecrets":  []any{map[string]any{"name": "pull"}},
				"image":             map[string]any{"digest": "sha256:" + strings.Repeat("a", 64)},
			}},
			assertions: func(t *testing.T, r rendered) {
				d, c := r.deployment(t)
				for _, a := range []string{"--metrics-bind-address=:18080", "--health-probe-bind-address=:18081",
					"--webhook-bind-address=:19443", "--step-server-url=http://steps.example:80", "--pprof-bind-address=:6060"} {
					require.Contains(t, c.Args, a)
				}
				require.Equal(t, ":19090", env(c, "KARGO_FLEET_STEP_SERVER_ADDR"))
				require.Equal(t, "bar", env(c, "FOO"))
				ports := map[string]int32{}
				for _, p := range c.Ports {
					ports[p.Name] = p.ContainerPort
				}
				require.Equal(t, map[string]int32{"steps": 19090, "webhook": 19443, "metrics": 18080, "probes": 18081}, ports)
				for task, url := range r.taskURLs(t) {
					require.Equal(t, "https://kargo-fleet-steps.kargo-fleet.svc:80", url, task)
				}
				spec := d.Spec.Template.Spec
				require.Equal(t, "system", spec.NodeSelector["pool"])
				require.Equal(t, "system", spec.Tolerations[0].Key)
				require.Equal(t, "system-cluster-critical", spec.PriorityClassName)
				require.Equal(t, "b", d.Spec.Template.Annotations["a"])
				require.Equal(t, "pull", spec.ImagePullSecrets[0].Name)
				require.Equal(t, "ghcr.io/kargo-fleet/kargo-fleet@sha256:"+strings.Repeat("a", 64), c.Image)
				require.Contains(t, yamlOf(t, Find(r.objs, "Service", "-steps")), "port: 80")
			},
		},
		{
			name: "step server TLS off",
			release: Release{Name: "kargo-fleet", Namespace: "kargo-fleet",
				Values: map[string]any{"steps": map[string]any{"tls": map[string]any{"enabled": false}}}},
			assertions: func(t *testing.T, r rendered) {
				for task, url := range r.taskURLs(t) {
					require.Equal(t, "http://kargo-fleet-steps.kargo-fleet.svc:9090", url, task)
				}
				d, c := r.deployment(t)
				require.False(t, hasArg(c, "--step-cert-secret"))
				require.Empty(t, env(c, "KARGO_FLEET_STEP_TLS_CERT_FILE"))
				for _, v := range d.Spec.Template.Spec.Volumes {
					require.NotEqual(t, "steps-tls", v.Name)
				}
			},
		},
		{
			name: "webhook off",
			release: Release{Name: "kargo-fleet", Namespace: "kargo-fleet",
				Values: map[string]any{"webhook": map[string]any{"enabled": false}, "crds": map[string]any{"keep": false}}},
			assertions: func(t *testing.T, r rendered) {
				d, c := r.deployment(t)
				require.Contains(t, c.Args, "--webhooks=false")
				require.Len(t, d.Spec.Template.Spec.Volumes, 1)
				require.Equal(t, "steps-tls", d.Spec.Template.Spec.Volumes[0].Name, "only the step server's certificate")
				require.Empty(t, r.names("ValidatingWebhookConfiguration"))
				require.Empty(t, Find(r.objs, "CustomResourceDefinition", "fleetstages.fleet.kargo-fleet.io").GetAnnotations()["helm.sh/resource-policy"])
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			objs, err := Render(tt.release)
			require.NoError(t, err)
			for _, o := range objs {
				require.NotEmpty(t, o.GetName(), "%s without a name", o.GetKind())
				require.Equal(t, "Helm", o.GetLabels()["app.kubernetes.io/managed-by"], "%s %s", o.GetKind(), o.GetName())
				// Objects of core kinds must decode strictly: a misspelt field
				// would be dropped by the API server without a word.
				gvk := o.GroupVersionKind()
				if typed, err := clientgoscheme.Scheme.New(gvk); err == nil {
					require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(o.Object, typed, true),
						"%s %s", o.GetKind(), o.GetName())
				}
			}
			tt.assertions(t, rendered{objs: objs})
			require.NoError(t, Lint(tt.release.Namespace, tt.release.Values))
		})
	}
}

func TestRenderRefusesBadValues(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		values  map[string]any
		wantErr string
	}{
		{name: "unknown certificates mode", values: map[string]any{"webhook": map[string]any{"certificates": "self"}},
			wantErr: "certificates"},
		{name: "own Secret without a name", values: map[string]any{"webhook": map[string]any{"certificates": "secret", "caBundle": "Q0E="}},
			wantErr: "webhook.secretName is required"},
		{name: "own Secret without a CA bundle", values: map[string]any{"webhook": map[string]any{"certificates": "secret", "secretName": "x"}},
			wantErr: "webhook.caBundle is required"},
		{name: "own step TLS Secret without a name", values: map[string]any{"steps": map[string]any{"tls": map[string]any{"certificates": "secret"}}},
			wantErr: "steps.tls.secretName is required"},
		{name: "unknown step certificates mode", values: map[string]any{"steps": map[string]any{"tls": map[string]any{"certificates": "acme"}}},
			wantErr: "certificates"},
		{name: "port out of range", values: map[string]any{"ports": map[string]any{"steps": 70000}}, wantErr: "steps"},
		{name: "misspelt value", values: map[string]any{"replica": 3}, wantErr: "replica"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Render(Release{Name: "kargo-fleet", Namespace: "kargo-fleet", Values: tt.values})
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}

// clusterRoleYAML returns the controller's ClusterRole as YAML.
func clusterRoleYAML(t *testing.T, r rendered) string {
	t.Helper()
	return yamlOf(t, Find(r.objs, "ClusterRole", "-controller"))
}

// rulesOf returns the rules of a rendered Role or ClusterRole.
func rulesOf(t *testing.T, o *unstructured.Unstructured) []rbacv1.PolicyRule {
	t.Helper()
	var role rbacv1.ClusterRole
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &role))
	return role.Rules
}

func yamlOf(t *testing.T, o *unstructured.Unstructured) string {
	t.Helper()
	require.NotNil(t, o)
	b, err := o.MarshalJSON()
	require.NoError(t, err)
	y, err := yamlFromJSON(b)
	require.NoError(t, err)
	return y
}

func yamlFromJSON(b []byte) (string, error) {
	y, err := sigsyaml.JSONToYAML(b)
	return string(y), err
}
