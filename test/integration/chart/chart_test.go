//go:build integration

package chart_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crdinstall "sigs.k8s.io/controller-runtime/pkg/envtest"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/cli"
	"github.com/kargo-fleet/kargo-fleet/internal/envtest"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetenv"
	"github.com/kargo-fleet/kargo-fleet/internal/helmchart"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/render"
	"github.com/kargo-fleet/kargo-fleet/internal/stepserver"
	"github.com/kargo-fleet/kargo-fleet/internal/steptoken"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

const (
	wait = 90 * time.Second
	tick = 100 * time.Millisecond
)

// TestReleaseRunsAsRendered applies every rendered object, runs the
// controller from the rendered Deployment under the rendered RBAC, and
// checks that it becomes ready, serves its webhook with the certificate it
// generated, and runs a wave Promotion through the rendered tasks.
func TestReleaseRunsAsRendered(t *testing.T) {
	ctx := context.Background()
	c := env.Client
	// The release namespace and the inventory namespaces the rendered Roles
	// are in exist before an install (the environment made argocd already).
	namespaces := map[string]bool{releaseNamespace: true}
	for _, o := range objs {
		namespaces[o.GetNamespace()] = o.GetNamespace() != ""
	}
	for ns, ok := range namespaces {
		if ok {
			err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
			require.True(t, err == nil || apierrors.IsAlreadyExists(err), "%v", err)
		}
	}
	require.Empty(t, helmchart.Find(objs, "PodDisruptionBudget", ""), "one replica: no budget that blocks drains")
	installServiceMonitorCRD(t)
	for _, o := range objs {
		require.NoError(t, c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o.DeepCopy()),
			client.ForceOwnership, client.FieldOwner("helm")), "%s %s", o.GetKind(), o.GetName())
	}

	logs, ctrlDone := startController(t)
	defer func() {
		if t.Failed() {
			t.Logf("controller log (tail):\n%s", tail(logs, 6000))
		}
	}()

	// Ready: the probe port answers /readyz, covering both servers.
	probes := fmt.Sprintf("http://127.0.0.1:%d", ports["probes"])
	require.Eventually(t, func() bool {
		select {
		case <-ctrlDone:
			require.FailNow(t, "the controller stopped")
		default:
		}
		code, _ := get(probes + "/readyz")
		return code == http.StatusOK
	}, wait, tick, "the controller never became ready")
	_, body := get(probes + "/readyz?verbose")
	require.Contains(t, body, "[+]steps ok")
	require.Contains(t, body, "[+]webhook ok")
	// Metrics: HTTPS, refused without a token, served to a ServiceAccount
	// bound to the rendered metrics reader ClusterRole, and to the
	// rendered ServiceMonitor's own scraper.
	metricsURL := fmt.Sprintf("https://127.0.0.1:%d/metrics", ports["metrics"])
	// The metrics server is a runnable of its own: ready probes do not
	// wait for its listener.
	var code int
	require.Eventually(t, func() bool {
		code, _ = getWithToken(metricsURL, "")
		return code != 0
	}, wait, tick, "the metrics server never answered")
	require.Equal(t, http.StatusUnauthorized, code)
	code, body = getWithToken(metricsURL, scraperToken(t))
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, "controller_runtime_")
	code, body = getWithToken(metricsURL, serviceMonitorToken(t))
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, "controller_runtime_")
	requireServiceMonitorVerifies(t, ports["metrics"])

	// Webhook: the generated CA is in the rendered webhook configuration and
	// the webhook server presents a certificate it signed for the Service.
	vwcName := helmchart.Find(objs, "ValidatingWebhookConfiguration", "").GetName()
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	require.Eventually(t, func() bool {
		return c.Get(ctx, client.ObjectKey{Name: vwcName}, vwc) == nil && len(vwc.Webhooks[0].ClientConfig.CABundle) > 0
	}, wait, tick, "the CA bundle was never written")
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(vwc.Webhooks[0].ClientConfig.CABundle))
	svc := vwc.Webhooks[0].ClientConfig.Service
	conn, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", ports["webhook"]),
		&tls.Config{RootCAs: pool, ServerName: fmt.Sprintf("%s.%s.svc", svc.Name, svc.Namespace), MinVersion: tls.VersionTLS12})
	require.NoError(t, err, "the webhook server's certificate must verify against the CA bundle")
	require.NoError(t, conn.Close())

	// Step server: TLS by default, with a certificate the controller
	// generated for the step Service and keeps in the release namespace.
	stepSvc := helmchart.Find(objs, "Service", "-steps").GetName()
	stepSecret := &corev1.Secret{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: releaseNamespace, Name: stepSvc + "-tls"}, stepSecret),
		"the generated step server certificate is kept in a Secret")
	stepCA := x509.NewCertPool()
	require.True(t, stepCA.AppendCertsFromPEM(stepSecret.Data["ca.crt"]))
	conn, err = tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", ports["steps"]),
		&tls.Config{RootCAs: stepCA, ServerName: fmt.Sprintf("%s.%s.svc", stepSvc, releaseNamespace), MinVersion: tls.VersionTLS12})
	require.NoError(t, err, "the step server's certificate must verify against its CA for the step Service")
	require.NoError(t, conn.Close())
	code, _ = get(fmt.Sprintf("http://127.0.0.1:%d/healthz", ports["steps"]))
	require.Equal(t, http.StatusBadRequest, code, "the step server speaks TLS only")

	// Leader election records its Event, allowed by the rendered Role.
	require.Eventually(t, func() bool {
		evs := &corev1.EventList{}
		if c.List(ctx, evs, client.InNamespace(releaseNamespace)) != nil {
			return false
		}
		for _, e := range evs.Items {
			if e.Reason == "LeaderElection" {
				return true
			}
		}
		return false
	}, wait, tick, "no leader election Event in %s", releaseNamespace)

	// envtest's API server cannot reach a Service, so it cannot call the
	// rendered webhook configuration; the FleetStage webhook keeps running
	// in the environment, served next to the simulator's.
	require.NoError(t, c.Delete(ctx, vwc))

	// A FleetStage reconciles and a wave Promotion runs the rendered
	// fleet-wave task against the step server at the task's default URL.
	ns := "chart-project"
	require.NoError(t, c.Create(ctx, envtest.ProjectNamespace(ns)))
	testutil.Create(t, c, testutil.MakeStage(ns, "prod").ArgoCDUpdate("guestbook-${{ vars.fleetTargetId }}").Obj())
	targets := []fleetv1alpha1.InlineTarget{{Name: "eu-1"}, {Name: "us-1"}}
	fs := testutil.MakeFleetStage(ns, "fleet").FromStage("prod").InlineTargets(targets...).
		Waves(fleetv1alpha1.Wave{Name: "all"}).Obj()
	testutil.Create(t, c, fs)
	testutil.AwaitReady(t, c, fs, wait)

	// The step token was minted under the rendered RBAC, which grants no
	// Secret of a Project but the token, and reads of Argo CD cluster
	// Secrets only in the inventory namespace.
	require.Eventually(t, func() bool {
		return c.Get(ctx, client.ObjectKey{Namespace: ns, Name: fleetv1alpha1.StepTokenSecretName}, &corev1.Secret{}) == nil
	}, wait, tick, "the step token was never minted")
	saName, _, _ := unstructured.NestedString(helmchart.Find(objs, "Deployment", "").Object,
		"spec", "template", "spec", "serviceAccountName")
	sa := fmt.Sprintf("system:serviceaccount:%s:%s", releaseNamespace, saName)
	for _, tt := range []struct {
		verb, namespace, name string
		want                  bool
	}{
		{verb: "get", namespace: ns, name: fleetv1alpha1.StepTokenSecretName, want: true},
		{verb: "update", namespace: ns, name: fleetv1alpha1.StepTokenSecretName, want: true},
		{verb: "get", namespace: ns, name: "db-password"},
		{verb: "list", namespace: ns},
		{verb: "delete", namespace: ns, name: "db-password"},
		{verb: "list", namespace: "argocd", want: true},
		{verb: "update", namespace: "argocd", name: "cluster-eu-1"},
		{verb: "get", namespace: "kube-system", name: "bootstrap-token-abcdef"},
		{verb: "update", namespace: releaseNamespace, name: steptoken.DefaultSigningKeySecret, want: true},
	} {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: sa, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + releaseNamespace},
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: tt.verb, Resource: "secrets", Namespace: tt.namespace, Name: tt.name,
			},
		}}
		require.NoError(t, c.Create(ctx, sar))
		require.Equal(t, tt.want, sar.Status.Allowed, "%s secrets %s/%s", tt.verb, tt.namespace, tt.name)
	}

	wave := kargo.NewPromotion(ns, render.WaveStageName("fleet", "all"), "f1", nil, nil)
	testutil.Create(t, c, testutil.MakeFreight(ns, "f1").Image("example.com/guestbook").Obj(), wave)
	testutil.Await(t, c, wave, wait, testutil.PromotionPhaseIs(kargo.PromotionSucceeded), "the wave Promotion never succeeded")
	ros := &fleetv1alpha1.FleetRolloutList{}
	require.NoError(t, c.List(ctx, ros, client.InNamespace(ns)))
	require.Len(t, ros.Items, 1)
	require.Equal(t, fleetv1alpha1.RolloutSucceeded, ros.Items[0].Status.Phase)
}

// startController runs `kargo-fleet` in this process with the rendered
// Deployment's arguments and environment, authenticated as the rendered
// ServiceAccount. Only what a Pod gets from its surroundings is supplied:
// a kubeconfig in place of the in-cluster config, the downward API's
// namespace, and a folder for each volume mount. It returns the log file
// and a channel closed when the controller stops.
func startController(t *testing.T) (string, <-chan struct{}) {
	t.Helper()
	dep := &appsv1.Deployment{}
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(helmchart.Find(objs, "Deployment", "").Object, dep))
	pod := dep.Spec.Template.Spec
	ctr := pod.Containers[0]

	user := fmt.Sprintf("system:serviceaccount:%s:%s", releaseNamespace, pod.ServiceAccountName)
	cfg, err := env.AddUser(user, "system:serviceaccounts", "system:serviceaccounts:"+releaseNamespace)
	require.NoError(t, err)
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	require.NoError(t, fleetenv.WriteKubeconfig(cfg, kubeconfig))

	args := append([]string{}, ctr.Args...)
	for _, m := range ctr.VolumeMounts {
		local := filepath.Join(dir, "mounts", m.Name)
		require.NoError(t, os.MkdirAll(local, 0o700))
		for i, a := range args {
			args[i] = strings.ReplaceAll(a, m.MountPath, local)
		}
	}
	args = append(args, "--kubeconfig="+kubeconfig)

	// fleetenv configures an in-process step server through the
	// environment; a Pod has only what the Deployment says.
	t.Setenv(stepserver.EnvSigningKeyFile, "")
	for _, e := range ctr.Env {
		v := e.Value
		if e.ValueFrom != nil {
			switch path := e.ValueFrom.FieldRef.FieldPath; path {
			case "metadata.namespace":
				v = releaseNamespace
			case "spec.serviceAccountName":
				v = pod.ServiceAccountName
			default:
				t.Fatalf("env %s comes from field %s, which this test does not fill", e.Name, path)
			}
		}
		t.Setenv(e.Name, v)
	}

	logs := filepath.Join(dir, "controller.log")
	logFile, err := os.Create(logs)
	require.NoError(t, err)
	cmd := cli.NewRootCommand(io.Discard, logFile)
	cmd.SetArgs(args)
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	var runErr error
	go func() {
		defer close(stopped)
		runErr = cmd.ExecuteContext(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-stopped:
			require.NoError(t, runErr)
		case <-time.After(30 * time.Second):
			t.Error("the controller did not stop")
		}
		_ = logFile.Close()
	})
	return logs, stopped
}

// scraperToken returns a token of a ServiceAccount bound to the rendered
// metrics reader ClusterRole, as Prometheus would hold.
func scraperToken(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	c := env.Client
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: releaseNamespace, Name: "prometheus"}}
	require.NoError(t, c.Create(ctx, sa))
	require.NoError(t, c.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "prometheus-fleet-metrics"},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole",
			Name: helmchart.Find(objs, "ClusterRole", "-metrics-reader").GetName()},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: releaseNamespace, Name: sa.Name}},
	}))
	tr := &authenticationv1.TokenRequest{}
	require.NoError(t, c.SubResource("token").Create(ctx, sa, tr))
	return tr.Status.Token
}

// serviceMonitorToken returns a token of the ServiceAccount whose token
// Secret the rendered ServiceMonitor sends. envtest runs no token
// controller to fill that Secret, so the token is requested for the same
// ServiceAccount.
func serviceMonitorToken(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	sm := helmchart.Find(objs, "ServiceMonitor", "")
	require.NotNil(t, sm)
	eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	secretName, _, _ := unstructured.NestedString(eps[0].(map[string]any), "authorization", "credentials", "name")
	secret := &corev1.Secret{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: releaseNamespace, Name: secretName}, secret))
	require.Equal(t, corev1.SecretTypeServiceAccountToken, secret.Type)
	sa := &corev1.ServiceAccount{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: releaseNamespace,
		Name: secret.Annotations[corev1.ServiceAccountNameKey]}, sa))
	tr := &authenticationv1.TokenRequest{}
	require.NoError(t, env.Client.SubResource("token").Create(ctx, sa, tr))
	return tr.Status.Token
}

// requireServiceMonitorVerifies checks the metrics server's certificate as
// the rendered ServiceMonitor makes Prometheus check it: against the CA in
// the Secret its tlsConfig names, for its serverName, without skipping
// verification.
func requireServiceMonitorVerifies(t *testing.T, port int) {
	t.Helper()
	sm := helmchart.Find(objs, "ServiceMonitor", "")
	require.NotNil(t, sm)
	eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	tlsConfig := eps[0].(map[string]any)["tlsConfig"].(map[string]any)
	require.NotContains(t, tlsConfig, "insecureSkipVerify")
	serverName, _, _ := unstructured.NestedString(tlsConfig, "serverName")
	secretName, _, _ := unstructured.NestedString(tlsConfig, "ca", "secret", "name")
	key, _, _ := unstructured.NestedString(tlsConfig, "ca", "secret", "key")
	secret := &corev1.Secret{}
	require.NoError(t, env.Client.Get(context.Background(), client.ObjectKey{Namespace: releaseNamespace, Name: secretName}, secret),
		"the controller keeps the metrics certificate's CA in the Secret the ServiceMonitor names")
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(secret.Data[key]), "%s of Secret %s holds the CA", key, secretName)
	conn, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port),
		&tls.Config{RootCAs: pool, ServerName: serverName, MinVersion: tls.VersionTLS12})
	require.NoError(t, err, "the metrics server's certificate must verify against the ServiceMonitor's CA for %s", serverName)
	require.NoError(t, conn.Close())
}

// installServiceMonitorCRD serves the Prometheus Operator's ServiceMonitor
// kind, schema-less, so the rendered ServiceMonitor applies; envtest runs no
// Prometheus Operator.
func installServiceMonitorCRD(t *testing.T) {
	t.Helper()
	preserve := true
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "servicemonitors.monitoring.coreos.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "monitoring.coreos.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "servicemonitors", Singular: "servicemonitor",
				Kind: "ServiceMonitor", ListKind: "ServiceMonitorList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: &preserve}}}},
		},
	}
	_, err := crdinstall.InstallCRDs(env.Config, crdinstall.CRDInstallOptions{CRDs: []*apiextensionsv1.CustomResourceDefinition{crd}})
	require.NoError(t, err)
}

// getWithToken GETs an HTTPS URL with a bearer token, not verifying the
// metrics server's certificate (requireServiceMonitorVerifies does).
func getWithToken(url, token string) (int, string) {
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}, //nolint:gosec // checked apart
	}}
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, err.Error()
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func get(url string) (int, string) {
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func tail(path string, n int) string {
	b, _ := os.ReadFile(path)
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(bytes.TrimSpace(b))
}
