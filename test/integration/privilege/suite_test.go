//go:build integration

// Package privilege_test proves the controller's least privilege on a real
// kube-apiserver (RBAC authorization, admission policies enforced): it
// applies the rendered chart's RBAC and ValidatingAdmissionPolicies, then
// impersonates the controller's ServiceAccount and runs the writes it
// could attempt beyond its purpose, which must be refused, and the writes
// it needs, which must succeed.
package privilege_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kargo-fleet/kargo-fleet/internal/envtest"
	"github.com/kargo-fleet/kargo-fleet/internal/helmchart"
	"github.com/kargo-fleet/kargo-fleet/internal/stepserver"
)

const (
	releaseName      = "fleet"
	releaseNamespace = "fleet-system"
)

var (
	env *envtest.Env
	// objs is the rendered release.
	objs []*unstructured.Unstructured
	// controller is a client impersonating the controller's ServiceAccount.
	controller client.Client
	// own names what the rendered Deployment tells the controller to use.
	own ownNames
)

// ownNames are the names the rendered Deployment gives the controller.
type ownNames struct {
	user       string
	signingKey string
	webhookTLS string
	stepsTLS   string
	metricsTLS string
}

// applied are the kinds of the release that bound the controller's writes:
// its identity, its roles and the admission policies.
var applied = map[string]bool{
	"ServiceAccount": true, "ClusterRole": true, "ClusterRoleBinding": true, "Role": true, "RoleBinding": true,
	"ValidatingAdmissionPolicy": true, "ValidatingAdmissionPolicyBinding": true,
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	if objs, err = helmchart.Render(helmchart.Release{Name: releaseName, Namespace: releaseNamespace}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if own, err = ownNamesOf(objs); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if env, err = envtest.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}()
	if err := install(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: own.user}
	if controller, err = client.New(cfg, client.Options{Scheme: env.Scheme}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("envtest: kube-apiserver %s started at %s; chart release %s/%s's RBAC and admission policies for %s\n",
		envtest.K8sVersion, env.Config.Host, releaseNamespace, releaseName, own.user)
	return m.Run()
}

// install creates the namespaces the rendered Roles are in and applies the
// rendered objects of the applied kinds, as Helm would.
func install(ctx context.Context) error {
	for _, o := range objs {
		if ns := o.GetNamespace(); ns != "" && applied[o.GetKind()] {
			err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				return err
			}
		}
	}
	for _, o := range objs {
		if !applied[o.GetKind()] {
			continue
		}
		if err := env.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(o.DeepCopy()),
			client.ForceOwnership, client.FieldOwner("helm")); err != nil {
			return fmt.Errorf("error applying %s %s: %w", o.GetKind(), o.GetName(), err)
		}
	}
	return nil
}

// ownNamesOf reads the controller's user and Secrets from the rendered
// Deployment, so the policies are checked against what it really uses.
func ownNamesOf(objs []*unstructured.Unstructured) (ownNames, error) {
	dep := helmchart.Find(objs, "Deployment", "")
	if dep == nil {
		return ownNames{}, fmt.Errorf("no Deployment rendered")
	}
	sa, _, _ := unstructured.NestedString(dep.Object, "spec", "template", "spec", "serviceAccountName")
	n := ownNames{user: fmt.Sprintf("system:serviceaccount:%s:%s", releaseNamespace, sa)}
	cs, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	ctr := cs[0].(map[string]any)
	args, _, _ := unstructured.NestedStringSlice(ctr, "args")
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--webhook-cert-secret="); ok {
			n.webhookTLS = v
		}
		if v, ok := strings.CutPrefix(a, "--step-cert-secret="); ok {
			n.stepsTLS = v
		}
		if v, ok := strings.CutPrefix(a, "--metrics-cert-secret="); ok {
			n.metricsTLS = v
		}
	}
	envs, _, _ := unstructured.NestedSlice(ctr, "env")
	for _, e := range envs {
		if em := e.(map[string]any); em["name"] == stepserver.EnvSigningKeySecret {
			n.signingKey, _ = em["value"].(string)
		}
	}
	if sa == "" || n.webhookTLS == "" || n.stepsTLS == "" || n.metricsTLS == "" || n.signingKey == "" {
		return ownNames{}, fmt.Errorf("the rendered Deployment does not name the controller's ServiceAccount and Secrets: %+v", n)
	}
	return n, nil
}
