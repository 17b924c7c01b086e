//go:build integration

package doctor_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/cli"
	"github.com/kargo-fleet/kargo-fleet/internal/doctor"
	"github.com/kargo-fleet/kargo-fleet/internal/envtest"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetenv"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

const (
	wait = 60 * time.Second
	tick = 100 * time.Millisecond
	// argoNamespace is where the fleet's Argo CD Applications live.
	argoNamespace = "argocd"
	// longTarget is a target whose Stage name is hashed (over 63 characters).
	longTarget = "eu-west-1-production-cluster-with-a-very-long-inventory-name-0042"
)

// kargoFleet runs the kargo-fleet command with args through the kubeconfig.
func kargoFleet(args ...string) (string, error) {
	var out, errOut bytes.Buffer
	cmd := cli.NewRootCommand(&out, &errOut)
	cmd.SetArgs(append(args, "--kubeconfig", kubeconfig))
	err := cmd.Execute()
	return out.String(), err
}

// runDoctor runs `kargo-fleet doctor <args> -o json` and returns the
// results by check.
func runDoctor(t *testing.T, args ...string) (map[string]doctor.Result, error) {
	t.Helper()
	out, err := kargoFleet(append([]string{"doctor", "-o", "json"}, args...)...)
	var r doctor.Report
	require.NoError(t, json.Unmarshal([]byte(out), &r), out)
	byCheck := map[string]doctor.Result{}
	for _, res := range r.Results {
		byCheck[res.Check] = res
	}
	return byCheck, err
}

func ctx() context.Context { return context.Background() }

// installChart creates what the Helm chart leaves in the controller's
// namespace besides the Deployment: the step and webhook Services with
// ready EndpointSlices, the leader Lease and the webhook configuration.
// The webhook selects no object, so the API server never calls it.
func installChart(t *testing.T) {
	t.Helper()
	c := env.Client
	ns := fleetenv.ControllerNamespace
	if err := c.Create(ctx(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	for name, port := range map[string]int32{"kargo-fleet-steps": 9090, "kargo-fleet-webhook": 443} {
		require.NoError(t, c.Create(ctx(), &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: port, TargetPort: intstr.FromInt32(port)}}},
		}))
		ready := true
		require.NoError(t, c.Create(ctx(), &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: name + "-x1", Labels: map[string]string{discoveryv1.LabelServiceName: name}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.7"}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		}))
	}
	renewLease(t, ns, time.Now())
	setReadyReplicas(t, ns, doctor.DefaultRelease, doctor.DefaultRelease, 2)
	createWebhookConfiguration(t, ns, doctor.DefaultRelease, doctor.DefaultRelease)
}

// createWebhookConfiguration creates the webhook configuration of a
// release, labelled as the chart labels it, calling the release's webhook
// Service in ns.
func createWebhookConfiguration(t *testing.T, ns, release, name string) {
	t.Helper()
	port := int32(443)
	none, fail := admissionregistrationv1.SideEffectClassNone, admissionregistrationv1.Ignore
	// The environment registers the chart's Promotion guard under the
	// release's name already: this one takes its place.
	old := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := env.Client.Get(ctx(), client.ObjectKey{Name: name}, old); err == nil {
		require.NoError(t, env.Client.Delete(ctx(), old))
	}
	require.NoError(t, env.Client.Create(ctx(), &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: releaseLabels(release)},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "fleetstages.fleet.kargo-fleet.io",
			AdmissionReviewVersions: []string{"v1"},
			SideEffects:             &none,
			FailurePolicy:           &fail,
			ObjectSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"doctor.test/never": "true"}},
			ClientConfig: admissionregistrationv1.WebhookClientConfig{
				Service:  &admissionregistrationv1.ServiceReference{Namespace: ns, Name: "kargo-fleet-webhook", Port: &port},
				CABundle: env.Config.CAData,
			},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{"fleet.kargo-fleet.io"}, APIVersions: []string{"v1alpha1"}, Resources: []string{"fleetstages"}},
			}},
		}},
	}))
}

// releaseLabels are the labels the chart gives the objects of a release.
func releaseLabels(release string) map[string]string {
	return map[string]string{doctor.LabelName: doctor.ChartName, doctor.LabelInstance: release}
}

// setReadyReplicas creates the controller Deployment of a release, or
// updates it, with n of 2 replicas ready (envtest runs no Deployment
// controller: the test writes the status).
func setReadyReplicas(t *testing.T, ns, release, name string, n int32) {
	t.Helper()
	labels := releaseLabels(release)
	deploy := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}}
	err := env.Client.Get(ctx(), client.ObjectKeyFromObject(deploy), deploy)
	if apierrors.IsNotFound(err) {
		deploy.Spec = appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "controller", Image: "kargo-fleet:test"}}},
			},
		}
		require.NoError(t, env.Client.Create(ctx(), deploy))
	} else {
		require.NoError(t, err)
	}
	deploy.Status = appsv1.DeploymentStatus{Replicas: 2, ReadyReplicas: n, AvailableReplicas: n}
	require.NoError(t, env.Client.Status().Update(ctx(), deploy))
}

// renewLease writes the leader Lease in ns as a controller replica renewing
// it at renew.
func renewLease(t *testing.T, ns string, renew time.Time) {
	t.Helper()
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: doctor.LeaseName}}
	holder, duration := "kargo-fleet-7d9f-abcde_1234", int32(15)
	err := env.Client.Get(ctx(), client.ObjectKeyFromObject(lease), lease)
	if apierrors.IsNotFound(err) {
		lease.Spec = coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &duration}
		require.NoError(t, env.Client.Create(ctx(), lease))
	} else {
		require.NoError(t, err)
	}
	lease.Spec.RenewTime = &metav1.MicroTime{Time: renew}
	require.NoError(t, env.Client.Update(ctx(), lease))
}

// newFleet creates Project ns with an adopted Stage "prod" whose template
// is Kargo's standard one: commit, then argocd-update of Application
// guestbook-<target id> to the revision the commit step output; and a
// FleetStage "prod" over targets in two waves; it waits until it is Ready.
func newFleet(t *testing.T, ns string, targets ...fleetv1alpha1.InlineTarget) *fleetv1alpha1.FleetStage {
	t.Helper()
	return newFleetWith(t, ns, nil, targets...)
}

// newFleetWith is newFleet with mutate applied to the FleetStage before it
// is created.
func newFleetWith(t *testing.T, ns string, mutate func(*fleetv1alpha1.FleetStage), targets ...fleetv1alpha1.InlineTarget) *fleetv1alpha1.FleetStage {
	t.Helper()
	c := env.Client
	stage := testutil.MakeStage(ns, "prod").Steps(
		kargo.PromotionStep{Uses: "git-commit", As: "commit", Config: testutil.JSON(`{"path":"./out","message":"promote"}`)},
		testutil.ArgoCDUpdateStep(fmt.Sprintf(`{"apps":[{"name":"guestbook-${{ vars.fleetTargetId }}",`+
			`"namespace":%q,"sources":[{"repoURL":"${{ vars.gitRepo }}","desiredRevision":"${{ outputs.commit.commit }}"}]}]}`,
			argoNamespace)),
	).Obj()
	stage.Spec.PromotionTemplate.Spec.Vars = []kargo.ExpressionVariable{{Name: "gitRepo", Value: "https://git.example.com/guestbook.git"}}
	testutil.Create(t, c, envtest.ProjectNamespace(ns), stage)
	one, ten := intstr.FromInt32(1), intstr.FromString("10%")
	fs := testutil.MakeFleetStage(ns, "prod").FromStage("prod").InlineTargets(targets...).Waves(
		fleetv1alpha1.Wave{Name: "pilot", Count: &one, MaxFailures: &intstr.IntOrString{}},
		fleetv1alpha1.Wave{Name: "rest", MaxFailures: &ten},
	).Obj()
	if mutate != nil {
		mutate(fs)
	}
	testutil.Create(t, c, fs)
	return testutil.AwaitReady(t, c, fs, wait)
}

// targetStages lists the FleetStage's target Stages by target id.
func targetStages(t *testing.T, fs *fleetv1alpha1.FleetStage) map[string]string {
	t.Helper()
	var list kargo.StageList
	require.NoError(t, env.Client.List(ctx(), &list, client.InNamespace(fs.Namespace), client.MatchingLabels{
		fleetv1alpha1.FleetStageLabel: fs.Name, fleetv1alpha1.RoleLabel: fleetv1alpha1.RoleTarget}))
	out := map[string]string{}
	for _, s := range list.Items {
		out[s.Labels[fleetv1alpha1.TargetLabel]] = s.Name
	}
	return out
}

// setApplication creates or replaces Argo CD Application name with the
// given authorized-stage annotation ("" leaves it out).
func setApplication(t *testing.T, name, authorized string) {
	t.Helper()
	app := &unstructured.Unstructured{}
	app.SetAPIVersion("argoproj.io/v1alpha1")
	app.SetKind("Application")
	app.SetNamespace(argoNamespace)
	app.SetName(name)
	err := env.Client.Get(ctx(), client.ObjectKeyFromObject(app), app)
	if err != nil && !apierrors.IsNotFound(err) {
		require.NoError(t, err)
	}
	annotations := map[string]string{}
	if authorized != "" {
		annotations[kargo.AuthorizedStageAnnotation] = authorized
	}
	app.SetAnnotations(annotations)
	if apierrors.IsNotFound(err) {
		require.NoError(t, env.Client.Create(ctx(), app))
		return
	}
	require.NoError(t, env.Client.Update(ctx(), app))
}

// applicationGVK is Argo CD's Application kind.
var applicationGVK = schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "Application"}

// setAppProject creates or replaces the AppProject name in the Argo CD
// namespace with spec.
func setAppProject(t *testing.T, name string, spec map[string]any) {
	t.Helper()
	p := &unstructured.Unstructured{}
	p.SetAPIVersion("argoproj.io/v1alpha1")
	p.SetKind("AppProject")
	p.SetNamespace(argoNamespace)
	p.SetName(name)
	err := env.Client.Get(ctx(), client.ObjectKeyFromObject(p), p)
	if err != nil && !apierrors.IsNotFound(err) {
		require.NoError(t, err)
	}
	p.Object["spec"] = spec
	if apierrors.IsNotFound(err) {
		require.NoError(t, env.Client.Create(ctx(), p))
		return
	}
	require.NoError(t, env.Client.Update(ctx(), p))
}

// setApplicationSpec replaces an Application's spec and its status
// conditions (nil: none), as Argo CD would show them.
func setApplicationSpec(t *testing.T, name string, spec map[string]any, conditions []any) {
	t.Helper()
	app := &unstructured.Unstructured{}
	app.SetAPIVersion("argoproj.io/v1alpha1")
	app.SetKind("Application")
	require.NoError(t, env.Client.Get(ctx(), client.ObjectKey{Namespace: argoNamespace, Name: name}, app))
	app.Object["spec"] = spec
	require.NoError(t, env.Client.Update(ctx(), app))
	app.Object["status"] = map[string]any{"conditions": conditions}
	require.NoError(t, env.Client.Status().Update(ctx(), app))
}
