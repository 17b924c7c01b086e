package helmchart

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
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
				require.Contains(t, c.Args, "--guard-webhooks=kargo-fleet")
				require.Equal(t, "/etc/kargo-fleet/steps-tls/tls.crt", env(c, "KARGO_FLEET_STEP_TLS_CERT_FILE"))
				require.Equal(t, "/etc/kargo-fleet/steps-tls/tls.key", env(c, "KARGO_FLEET_STEP_TLS_KEY_FILE"))
				require.Empty(t, r.names("Certificate"))
				require.Empty(t, r.names("ServiceMonitor"), "no monitoring.coreos.com/v1 in the cluster")
				require.Contains(t, r.names("ClusterRole"), "kargo-fleet-webhook-certs")
				pdb := pdbOf(t, r)
				require.Equal(t, "1", pdb.Spec.MinAvailable.String(), "two replicas, one may go during a drain")
				require.Nil(t, pdb.Spec.MaxUnavailable)
				_, c = r.deployment(t)
				require.True(t, *c.SecurityContext.ReadOnlyRootFilesystem)
				require.Equal(t, int32(5), c.ReadinessProbe.PeriodSeconds)
				for _, crd := range []string{"fleetstages.fleet.kargo-fleet.io", "fleetrollouts.fleet.kargo-fleet.io"} {
					o := Find(r.objs, "CustomResourceDefinition", crd)
					require.NotNil(t, o, crd)
					require.Equal(t, "keep", o.GetAnnotations()["helm.sh/resource-policy"])
				}
				require.Contains(t, c.Args, "--inventory-namespaces=argocd")
				require.Contains(t, c.Args, "--kargo-global-service-account-namespaces=kargo", "as a stock Kargo with OIDC")
				require.Contains(t, r.names("ClusterRoleBinding"), "kargo-fleet-freightpolicy-reader",
					"everyone may read the FreightPolicies that may block them")
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
				shards, err := Render(Release{Name: "kargo-fleet", Namespace: "kargo-fleet", Values: map[string]any{
					"networkPolicy": map[string]any{"extraStepClients": []any{map[string]any{"namespace": "kargo-eu",
						"podLabels": map[string]any{"app.kubernetes.io/component": "controller"}}}}}})
				require.NoError(t, err)
				shardPolicy := yamlOf(t, Find(shards, "NetworkPolicy", ""))
				require.Contains(t, shardPolicy, "kubernetes.io/metadata.name: kargo-eu", "a shard controller elsewhere reaches the step server")
				require.Equal(t, 2, strings.Count(shardPolicy, "port: steps"))
				require.NotNil(t, Find(r.objs, "ServiceAccount", ""), "the chart makes its ServiceAccount")
				global, err := Render(Release{Name: "kargo-fleet", Namespace: "kargo-fleet", Values: map[string]any{
					"controller": map[string]any{"kargoGlobalServiceAccountNamespaces": []any{"kargo", "kargo-people"}},
					"rbac":       map[string]any{"freightPoliciesReadableByAll": false}}})
				require.NoError(t, err)
				_, gc := rendered{objs: global}.deployment(t)
				require.Contains(t, gc.Args, "--kargo-global-service-account-namespaces=kargo,kargo-people")
				require.NotContains(t, rendered{objs: global}.names("ClusterRoleBinding"), "kargo-fleet-freightpolicy-reader")
				require.Contains(t, rendered{objs: global}.names("ClusterRole"), "kargo-fleet-freightpolicy-reader")
				platformSA, err := Render(Release{Name: "kargo-fleet", Namespace: "kargo-fleet",
					Values: map[string]any{"serviceAccount": map[string]any{"create": false, "name": "platform-made"}}})
				require.NoError(t, err)
				for _, o := range platformSA {
					require.NotEqual(t, "ServiceAccount", o.GetKind(), "serviceAccount.create false: the platform's own")
				}
				require.Contains(t, yamlOf(t, Find(platformSA, "ClusterRoleBinding", "-controller")), "name: platform-made",
					"the roles are bound to the ServiceAccount named")
				apps := Find(r.objs, "Role", "-applications")
				require.Equal(t, "argocd", apps.GetNamespace())
				require.Equal(t, []string{"applications"}, rulesOf(t, apps)[0].Resources)
				require.Equal(t, []string{"get", "list", "watch"}, rulesOf(t, apps)[0].Verbs, "Applications are read only")
				le := Find(r.objs, "Role", "-leader-election")
				require.NotNil(t, le)
				require.Contains(t, yamlOf(t, le), "- events", "leader election records core Events")
				viewer := Find(r.objs, "ClusterRole", "-fleet-viewer")
				require.Equal(t, "true", viewer.GetLabels()["rbac.authorization.k8s.io/aggregate-to-view"])
				operator := Find(r.objs, "ClusterRole", "-fleet-operator")
				require.Equal(t, "true", operator.GetLabels()["rbac.authorization.k8s.io/aggregate-to-edit"])
				require.Empty(t, operator.GetLabels()["rbac.authorization.k8s.io/aggregate-to-view"])
				// Admission policies narrow what the ClusterRole cannot, for
				// the controller's own user (test/integration/privilege).
				policies := r.names("ValidatingAdmissionPolicy")
				require.Equal(t, []string{"kargo-fleet-controller-secrets", "kargo-fleet-controller-namespaces",
					"kargo-fleet-controller-configmaps", "kargo-fleet-audit-trail"}, policies)
				require.Equal(t, policies, r.names("ValidatingAdmissionPolicyBinding"))
				secrets := yamlOf(t, Find(r.objs, "ValidatingAdmissionPolicy", "-controller-secrets"))
				require.Contains(t, secrets,
					`request.userInfo.username == "system:serviceaccount:kargo-fleet:kargo-fleet"`)
				require.Contains(t, secrets, `["kargo-fleet-step-key"]`, "the signing key is Opaque")
				require.Contains(t, secrets, `["kargo-fleet-webhook-tls","kargo-fleet-steps-tls","kargo-fleet-metrics-tls"]`,
					"the generated certificates are kubernetes.io/tls")
				d, _ := r.deployment(t)
				spread := d.Spec.Template.Spec.TopologySpreadConstraints
				require.Len(t, spread, 1)
				require.Equal(t, "kubernetes.io/hostname", spread[0].TopologyKey)
				require.Equal(t, corev1.ScheduleAnyway, spread[0].WhenUnsatisfiable)
				require.Equal(t, d.Spec.Selector.MatchLabels, spread[0].LabelSelector.MatchLabels,
					"the replicas are spread by the Deployment's own selector")
			},
		},
		{
			name:    "admission policies off; certificates not generated are no Secrets of the controller's",
			release: Release{Name: "kargo-fleet", Namespace: "kargo-fleet", APIVersions: []string{"cert-manager.io/v1"}},
			assertions: func(t *testing.T, r rendered) {
				secrets := yamlOf(t, Find(r.objs, "ValidatingAdmissionPolicy", "-controller-secrets"))
				require.Contains(t, secrets, `["kargo-fleet-steps-tls","kargo-fleet-metrics-tls"]`, "cert-manager writes the webhook's Secret")
				objs, err := Render(Release{Name: "kargo-fleet", Namespace: "kargo-fleet",
					Values: map[string]any{"rbac": map[string]any{"admissionPolicies": false}}})
				require.NoError(t, err)
				off := rendered{objs: objs}
				require.Empty(t, off.names("ValidatingAdmissionPolicy"))
				require.Empty(t, off.names("ValidatingAdmissionPolicyBinding"))
			},
		},
		{
			name:    "other namespace and release name",
			release: Release{Name: "prod", Namespace: "platform"},
			assertions: func(t *testing.T, r rendered) {
				for _, o := range r.objs {
					if o.GetNamespace() != "" && !strings.HasSuffix(o.GetName(), "-inventory") && !strings.HasSuffix(o.GetName(), "-applications") {
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
				require.NotContains(t, sm, "bearerToken", "bearerTokenFile and bearerTokenSecret are deprecated")
				ep := serviceMonitorEndpoint(t, r)
				require.Equal(t, map[string]any{"type": "Bearer",
					"credentials": map[string]any{"name": "kargo-fleet-metrics-scraper-token", "key": "token"}}, ep["authorization"])
				// The token is the scraper's own, which may get /metrics only.
				require.Contains(t, r.names("ServiceAccount"), "kargo-fleet-metrics-scraper")
				tok := Find(r.objs, "Secret", "-metrics-scraper-token")
				require.NotNil(t, tok)
				require.Equal(t, "kubernetes.io/service-account-token", tok.Object["type"])
				require.Equal(t, "kargo-fleet-metrics-scraper", tok.GetAnnotations()["kubernetes.io/service-account.name"])
				crb := Find(r.objs, "ClusterRoleBinding", "-metrics-scraper")
				require.Contains(t, yamlOf(t, crb), "name: kargo-fleet-metrics-reader")
				require.Contains(t, yamlOf(t, crb), "name: kargo-fleet-metrics-scraper\n  namespace: kargo-fleet")
				// Prometheus sends the token only to the metrics Service's
				// certificate, verified against the generated CA.
				require.NotContains(t, sm, "insecureSkipVerify")
				require.Equal(t, map[string]any{"serverName": "kargo-fleet-metrics.kargo-fleet.svc",
					"ca": map[string]any{"secret": map[string]any{"name": "kargo-fleet-metrics-tls", "key": "ca-bundle.crt"}}},
					ep["tlsConfig"])
				_, c = r.deployment(t)
				for _, a := range []string{"--metrics-cert-dir=/etc/kargo-fleet/metrics-tls",
					"--metrics-cert-secret=kargo-fleet-metrics-tls", "--metrics-service=kargo-fleet-metrics"} {
					require.Contains(t, c.Args, a, "the controller generates the certificate the ServiceMonitor verifies")
				}
				require.Contains(t, c.VolumeMounts, corev1.VolumeMount{Name: "metrics-tls", MountPath: "/etc/kargo-fleet/metrics-tls"})
				require.Contains(t, r.names("Service"), "kargo-fleet-metrics", "the certificate's name is the metrics Service's")
				require.Contains(t, r.names("ClusterRole"), "kargo-fleet-webhook-certs",
					"whatever the certificates, the controller keeps the Promotion guard's match condition")
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
				require.Len(t, d.Spec.Template.Spec.Volumes, 3)
			},
		},
		{
			name: "custom ports, step server URL and scheduling",
			release: Release{Name: "kargo-fleet", Namespace: "kargo-fleet", Values: map[string]any{
				"ports":   map[string]any{"steps": 19090, "webhook": 19443, "metrics": 18080, "probes": 18081},
				"service": map[string]any{"steps": 80, "metrics": 8443},
				"controller": map[string]any{"stepServerURL": "http://steps.example:80", "dashboardURL": "https://fleet.example.com", "extraArgs": []any{"--pprof-bind-address=:6060"},
					"stepServerShardURLs": map[string]any{"us": "https://steps.us.example", "eu": "https://steps.eu.example:8443"},
					"extraEnv":            []any{map[string]any{"name": "FOO", "value": "bar"}}},
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
					"--webhook-bind-address=:19443", "--step-server-url=http://steps.example:80", "--pprof-bind-address=:6060",
					"--dashboard-url=https://fleet.example.com",
					"--step-server-shard-urls=eu=https://steps.eu.example:8443,us=https://steps.us.example"} {
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
			name:    "one replica: no PodDisruptionBudget, which would block every drain",
			release: Release{Name: "kargo-fleet", Namespace: "kargo-fleet", Values: map[string]any{"replicas": 1}},
			assertions: func(t *testing.T, r rendered) {
				d, _ := r.deployment(t)
				require.Equal(t, int32(1), *d.Spec.Replicas)
				require.Empty(t, r.names("PodDisruptionBudget"))
			},
		},
		{
			name: "no replicas once the Promotion admission guard is off",
			release: Release{Name: "kargo-fleet", Namespace: "kargo-fleet", Values: map[string]any{"replicas": 0,
				"webhook": map[string]any{"promotionGuard": map[string]any{"enabled": false}}}},
			assertions: func(t *testing.T, r rendered) {
				d, _ := r.deployment(t)
				require.Equal(t, int32(0), *d.Spec.Replicas)
				require.NotContains(t, yamlOf(t, Find(r.objs, "ValidatingWebhookConfiguration", "")), "promotions.fleet.kargo-fleet.io")
				objs, err := Render(Release{Name: "kargo-fleet", Namespace: "kargo-fleet", Values: map[string]any{"replicas": 0,
					"webhook": map[string]any{"enabled": false}}})
				require.NoError(t, err, "without webhooks there is no guard to answer")
				require.Empty(t, rendered{objs: objs}.names("ValidatingWebhookConfiguration"))
			},
		},
		{
			name: "PodDisruptionBudget: minAvailable by default, maxUnavailable when set",
			release: Release{Name: "kargo-fleet", Namespace: "kargo-fleet", Values: map[string]any{"replicas": 3,
				"podDisruptionBudget": map[string]any{"maxUnavailable": "34%"}}},
			assertions: func(t *testing.T, r rendered) {
				pdb := pdbOf(t, r)
				require.Nil(t, pdb.Spec.MinAvailable)
				require.Equal(t, "34%", pdb.Spec.MaxUnavailable.String())
				require.Equal(t, "kargo-fleet", pdb.Spec.Selector.MatchLabels["app.kubernetes.io/instance"])
			},
		},
		{
			name: "security contexts and probe timings from values",
			release: Release{Name: "kargo-fleet", Namespace: "kargo-fleet", Values: map[string]any{
				"podSecurityContext": map[string]any{"runAsUser": 65532, "fsGroup": 65532, "seccompProfile": nil},
				"securityContext":    map[string]any{"readOnlyRootFilesystem": false, "runAsGroup": 65532},
				"readinessProbe":     map[string]any{"periodSeconds": 2, "failureThreshold": 10},
				"livenessProbe":      map[string]any{"initialDelaySeconds": 30, "timeoutSeconds": 9},
			}},
			assertions: func(t *testing.T, r rendered) {
				d, c := r.deployment(t)
				psc := d.Spec.Template.Spec.SecurityContext
				require.Equal(t, int64(65532), *psc.RunAsUser)
				require.Equal(t, int64(65532), *psc.FSGroup)
				require.True(t, *psc.RunAsNonRoot, "a default the values leave alone stays")
				require.Nil(t, psc.SeccompProfile, "null drops a default")
				sc := c.SecurityContext
				require.False(t, *sc.ReadOnlyRootFilesystem)
				require.Equal(t, int64(65532), *sc.RunAsGroup)
				require.False(t, *sc.AllowPrivilegeEscalation)
				require.Equal(t, []corev1.Capability{"ALL"}, sc.Capabilities.Drop)
				require.Equal(t, "/readyz", c.ReadinessProbe.HTTPGet.Path, "the endpoints stay the chart's")
				require.Equal(t, int32(2), c.ReadinessProbe.PeriodSeconds)
				require.Equal(t, int32(10), c.ReadinessProbe.FailureThreshold)
				require.Equal(t, int32(5), c.ReadinessProbe.TimeoutSeconds, "the chart's default timing")
				require.Equal(t, "/healthz", c.LivenessProbe.HTTPGet.Path)
				require.Equal(t, int32(30), c.LivenessProbe.InitialDelaySeconds)
				require.Equal(t, int32(9), c.LivenessProbe.TimeoutSeconds)
				require.Equal(t, int32(10), c.LivenessProbe.PeriodSeconds)
			},
		},
		{
			name: "common labels and annotations on every object, Kargo's global names too",
			release: Release{Name: "kargo-fleet", Namespace: "kargo-fleet", APIVersions: []string{"cert-manager.io/v1", "monitoring.coreos.com/v1"},
				Values: map[string]any{
					"global":            map[string]any{"labels": map[string]any{"cost-center": "42", "team": "global"}, "annotations": map[string]any{"owner": "global"}},
					"commonLabels":      map[string]any{"team": "platform", "app.kubernetes.io/name": "not-ours"},
					"commonAnnotations": map[string]any{"owner": "platform@example.com", "cert-manager.io/inject-ca-from": "x/y"},
					"serviceAccount":    map[string]any{"annotations": map[string]any{"iam.example.com/role": "fleet"}},
				}},
			assertions: func(t *testing.T, r rendered) {
				kinds := map[string]bool{}
				for _, o := range r.objs {
					what := o.GetKind() + " " + o.GetName()
					kinds[o.GetKind()] = true
					require.Equal(t, "platform", o.GetLabels()["team"], what)
					require.Equal(t, "42", o.GetLabels()["cost-center"], what)
					require.Equal(t, "kargo-fleet", o.GetLabels()["app.kubernetes.io/name"], "%s: the chart's own labels win", what)
					require.Equal(t, "platform@example.com", o.GetAnnotations()["owner"], what)
				}
				for _, k := range []string{"CustomResourceDefinition", "ClusterPromotionTask", "Deployment", "Service", "ServiceAccount",
					"ValidatingWebhookConfiguration", "Certificate", "ServiceMonitor", "Secret", "PodDisruptionBudget", "NetworkPolicy"} {
					require.True(t, kinds[k], "no %s rendered", k)
				}
				vwc := Find(r.objs, "ValidatingWebhookConfiguration", "")
				require.Equal(t, "kargo-fleet/kargo-fleet-webhook", vwc.GetAnnotations()["cert-manager.io/inject-ca-from"],
					"an object's own annotations win")
				crd := Find(r.objs, "CustomResourceDefinition", "fleetstages.fleet.kargo-fleet.io")
				require.Equal(t, "keep", crd.GetAnnotations()["helm.sh/resource-policy"])
				require.Equal(t, "fleet", Find(r.objs, "ServiceAccount", "kargo-fleet").GetAnnotations()["iam.example.com/role"])
				d, _ := r.deployment(t)
				require.Equal(t, map[string]string{"app.kubernetes.io/name": "kargo-fleet", "app.kubernetes.io/instance": "kargo-fleet"},
					d.Spec.Selector.MatchLabels, "the selector never changes with common labels")
				require.Contains(t, yamlOf(t, Find(r.objs, "ClusterPromotionTask", "fleet-wave")), "app.kubernetes.io/component: steps")
			},
		},
		{
			name: "ServiceMonitor with the operator's token Secret, and without secure metrics",
			release: Release{Name: "kargo-fleet", Namespace: "kargo-fleet", APIVersions: []string{"monitoring.coreos.com/v1"},
				Values: map[string]any{"serviceMonitor": map[string]any{"credentials": map[string]any{"secretName": "prom-token", "key": "tk"}}}},
			assertions: func(t *testing.T, r rendered) {
				require.Equal(t, map[string]any{"type": "Bearer", "credentials": map[string]any{"name": "prom-token", "key": "tk"}},
					serviceMonitorEndpoint(t, r)["authorization"])
				require.NotContains(t, r.names("ServiceAccount"), "kargo-fleet-metrics-scraper", "no scraper of the chart's own")
				require.Empty(t, r.names("Secret"))

				objs, err := Render(Release{Name: "kargo-fleet", Namespace: "kargo-fleet", APIVersions: []string{"monitoring.coreos.com/v1"},
					Values: map[string]any{"metrics": map[string]any{"secure": false}}})
				require.NoError(t, err)
				plain := rendered{objs: objs}
				ep := serviceMonitorEndpoint(t, plain)
				require.NotContains(t, ep, "authorization", "plain metrics need no token")
				require.NotContains(t, ep, "scheme")
				require.Empty(t, plain.names("Secret"))
			},
		},
		{
			name: "metrics certificate from the operator's Secret; verification skipped only when asked",
			release: Release{Name: "fleet", Namespace: "ops", APIVersions: []string{"monitoring.coreos.com/v1"},
				Values: map[string]any{"metrics": map[string]any{"tls": map[string]any{"certificates": "secret", "secretName": "metrics-cert"}}}},
			assertions: func(t *testing.T, r rendered) {
				require.Equal(t, map[string]any{"serverName": "fleet-kargo-fleet-metrics.ops.svc",
					"ca": map[string]any{"secret": map[string]any{"name": "metrics-cert", "key": "ca.crt"}}},
					serviceMonitorEndpoint(t, r)["tlsConfig"], "cert-manager's Secrets carry the CA in ca.crt")
				d, c := r.deployment(t)
				require.Contains(t, c.Args, "--metrics-cert-dir=/etc/kargo-fleet/metrics-tls")
				require.False(t, hasArg(c, "--metrics-cert-secret"), "the operator's Secret is mounted, not generated")
				require.Contains(t, c.VolumeMounts, corev1.VolumeMount{Name: "metrics-tls", MountPath: "/etc/kargo-fleet/metrics-tls", ReadOnly: true})
				var vol *corev1.Volume
				for i := range d.Spec.Template.Spec.Volumes {
					if d.Spec.Template.Spec.Volumes[i].Name == "metrics-tls" {
						vol = &d.Spec.Template.Spec.Volumes[i]
					}
				}
				require.NotNil(t, vol)
				require.Equal(t, "metrics-cert", vol.Secret.SecretName)
				require.NotContains(t, yamlOf(t, Find(r.objs, "ValidatingAdmissionPolicy", "-controller-secrets")), "metrics-cert",
					"the controller writes no Secret of the operator's")

				_, err := Render(Release{Name: "fleet", Namespace: "ops",
					Values: map[string]any{"metrics": map[string]any{"tls": map[string]any{"certificates": "secret"}}}})
				require.ErrorContains(t, err, "metrics.tls.secretName is required")
				_, err = Render(Release{Name: "fleet", Namespace: "ops",
					Values: map[string]any{"metrics": map[string]any{"tls": map[string]any{"certificates": "self-signed"}}}})
				require.Error(t, err, "the schema knows generated and secret only")

				objs, err := Render(Release{Name: "fleet", Namespace: "ops", APIVersions: []string{"monitoring.coreos.com/v1"},
					Values: map[string]any{"serviceMonitor": map[string]any{"tlsConfig": map[string]any{"insecureSkipVerify": true}}}})
				require.NoError(t, err)
				require.Equal(t, map[string]any{"insecureSkipVerify": true}, serviceMonitorEndpoint(t, rendered{objs: objs})["tlsConfig"])

				objs, err = Render(Release{Name: "fleet", Namespace: "ops", Values: map[string]any{"metrics": map[string]any{"secure": false}}})
				require.NoError(t, err)
				_, plain := rendered{objs: objs}.deployment(t)
				require.False(t, hasArg(plain, "--metrics-cert"), "plain metrics need no certificate")
			},
		},
		{
			name: "webhook off",
			release: Release{Name: "kargo-fleet", Namespace: "kargo-fleet",
				Values: map[string]any{"webhook": map[string]any{"enabled": false}, "crds": map[string]any{"keep": false}}},
			assertions: func(t *testing.T, r rendered) {
				d, c := r.deployment(t)
				require.Contains(t, c.Args, "--webhooks=false")
				require.Len(t, d.Spec.Template.Spec.Volumes, 2)
				require.Equal(t, "steps-tls", d.Spec.Template.Spec.Volumes[0].Name, "only the step server's and metrics certificates")
				require.Equal(t, "metrics-tls", d.Spec.Template.Spec.Volumes[1].Name)
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
		{name: "a PodDisruptionBudget that keeps every replica", values: map[string]any{"replicas": 2,
			"podDisruptionBudget": map[string]any{"minAvailable": 2}}, wantErr: "would block every node drain"},
		{name: "a percentage that keeps every replica", values: map[string]any{"replicas": 3,
			"podDisruptionBudget": map[string]any{"minAvailable": "90%"}}, wantErr: "would block every node drain"},
		{name: "maxUnavailable 0", values: map[string]any{"podDisruptionBudget": map[string]any{"maxUnavailable": 0}},
			wantErr: "maxUnavailable"},
		{name: "a probe endpoint from values", values: map[string]any{"livenessProbe": map[string]any{"httpGet": map[string]any{"path": "/"}}},
			wantErr: "httpGet"},
		{name: "a label that is not a string", values: map[string]any{"commonLabels": map[string]any{"tier": 1}},
			wantErr: "commonLabels"},
		{name: "no replica to answer the Promotion admission guard", values: map[string]any{"replicas": 0},
			wantErr: "at '/webhook/promotionGuard/enabled': value must be false"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Render(Release{Name: "kargo-fleet", Namespace: "kargo-fleet", Values: tt.values})
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}

// serviceMonitorEndpoint returns the rendered ServiceMonitor's only endpoint.
func serviceMonitorEndpoint(t *testing.T, r rendered) map[string]any {
	t.Helper()
	sm := Find(r.objs, "ServiceMonitor", "")
	require.NotNil(t, sm)
	eps, _, err := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	require.NoError(t, err)
	require.Len(t, eps, 1)
	return eps[0].(map[string]any)
}

// pdbOf returns the rendered PodDisruptionBudget.
func pdbOf(t *testing.T, r rendered) *policyv1.PodDisruptionBudget {
	t.Helper()
	u := Find(r.objs, "PodDisruptionBudget", "")
	require.NotNil(t, u)
	pdb := &policyv1.PodDisruptionBudget{}
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, pdb))
	return pdb
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
