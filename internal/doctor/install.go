package doctor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// Names of what the Helm chart installs.
const (
	// DefaultControllerNamespace is the chart's usual release namespace,
	// where the controller is looked for when no Deployment is found.
	DefaultControllerNamespace = "kargo-fleet"
	// DefaultRelease is the chart's usual release name.
	DefaultRelease = "kargo-fleet"
	// LeaseName is the controller's leader election Lease, in the release
	// namespace whatever the release is called.
	LeaseName = "kargo-fleet-controller"
	// serverURLVar is the ClusterPromotionTasks' step server URL variable.
	serverURLVar = "serverURL"
)

// kargoCRDs are the Kargo CRDs kargo-fleet uses, by kind.
var kargoCRDs = map[string]string{
	"ClusterPromotionTask": "clusterpromotiontasks.kargo.akuity.io",
	"Freight":              "freights.kargo.akuity.io",
	"Project":              "projects.kargo.akuity.io",
	"ProjectConfig":        "projectconfigs.kargo.akuity.io",
	"Promotion":            "promotions.kargo.akuity.io",
	"PromotionTask":        "promotiontasks.kargo.akuity.io",
	"Stage":                "stages.kargo.akuity.io",
	"Warehouse":            "warehouses.kargo.akuity.io",
}

// fleetCRDs are kargo-fleet's own CRDs.
var fleetCRDs = []string{"fleetrollouts.fleet.kargo-fleet.io", "fleetstages.fleet.kargo-fleet.io"}

// FleetTasks are the ClusterPromotionTasks the chart ships
// (charts/kargo-fleet/tasks).
var FleetTasks = []string{"fleet-gate", "fleet-rollback", "fleet-status", "fleet-wave"}

// Options configure a Doctor.
type Options struct {
	// Release is the Helm release to check; empty: the only kargo-fleet
	// release found.
	Release string
	// ControllerNamespace restricts the search for the release to one
	// namespace; empty: every namespace.
	ControllerNamespace string
	// Now is the time Lease freshness and change windows are judged at.
	Now time.Time
	// ShardPickupTimeout is how long a Stage may go without a status, or a
	// Promotion without a phase, before its shard counts as having no
	// Kargo controller (default DefaultShardPickupTimeout).
	ShardPickupTimeout time.Duration
	// KargoNamespace is Kargo's namespace, where its controllers keep their
	// heartbeat Leases (default kargo.DefaultNamespace).
	KargoNamespace string
	// Access answers access reviews (the break-glass grants check); nil
	// skips that check.
	Access AccessReviewer
}

// AccessReviewer answers whether a user may act on a resource, as the API
// server's authorizer would (SubjectAccessReviews).
type AccessReviewer interface {
	Allowed(ctx context.Context, user authenticationv1.UserInfo, attrs authorizationv1.ResourceAttributes) (bool, error)
}

// Doctor runs the checks through a client.
type Doctor struct {
	c    client.Reader
	opts Options
}

// New returns a Doctor reading through c.
func New(c client.Reader, opts Options) *Doctor {
	return &Doctor{c: c, opts: opts}
}

// Install runs the checks of the installation, in order.
func (d *Doctor) Install(ctx context.Context) []Result {
	if err := d.Reachable(ctx); err != nil {
		return []Result{fail(CheckAPIServer, "check the kubeconfig's server address, the network and your credentials' expiry",
			"cannot reach the API server: %v", err)}
	}
	tasks, res := d.checkPromotionTasks(ctx)
	rel, found, err := d.locate(ctx)
	return []Result{
		d.checkKargoCRDs(ctx),
		d.checkFleetCRDs(ctx),
		res,
		d.checkStepServer(ctx, tasks),
		d.checkController(ctx, rel, found, err),
		d.checkWebhook(ctx, rel, found),
		d.checkStepTokens(ctx),
	}
}

// locate finds the release to check by its controller Deployment's labels:
// LabelInstance when Options.Release is set, else LabelName. found says
// whether a Deployment was found; without one (kargo-fleet installed
// another way, or the Deployment not readable) rel is the chart's default
// release in Options.ControllerNamespace or DefaultControllerNamespace.
// err is an error reading, or the reason no single release was chosen.
func (d *Doctor) locate(ctx context.Context) (rel Release, found bool, err error) {
	fallback := Release{Name: cmp.Or(d.opts.Release, DefaultRelease),
		Namespace: cmp.Or(d.opts.ControllerNamespace, DefaultControllerNamespace)}
	fallback.Deployment = fallback.Name
	sel := client.MatchingLabels{LabelName: ChartName}
	if d.opts.Release != "" {
		sel = client.MatchingLabels{LabelInstance: d.opts.Release}
	}
	opts := []client.ListOption{sel}
	if d.opts.ControllerNamespace != "" {
		opts = append(opts, client.InNamespace(d.opts.ControllerNamespace))
	}
	list := &appsv1.DeploymentList{}
	if err := d.c.List(ctx, list, opts...); err != nil {
		return fallback, false, fmt.Errorf("%w: %w", errListingDeployments, err)
	}
	all := make([]Release, 0, len(list.Items))
	for i := range list.Items {
		dep := &list.Items[i]
		all = append(all, Release{Name: dep.Labels[LabelInstance], Namespace: dep.Namespace, Deployment: dep.Name})
	}
	picked, ok, msg := PickRelease(all, d.opts.Release)
	switch {
	case ok:
		return picked, true, nil
	case len(all) == 0 && d.opts.Release == "":
		// No chart Deployment: judge the Lease alone.
		return fallback, false, nil
	}
	return fallback, false, errors.New(msg)
}

func (d *Doctor) checkKargoCRDs(ctx context.Context) Result {
	const fix = "install Kargo v1.11.x (its Helm chart installs the CRDs) before kargo-fleet"
	var missing []string
	fields := map[string]bool{}
	for _, kind := range slices.Sorted(maps.Keys(kargoCRDs)) {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := d.c.Get(ctx, client.ObjectKey{Name: kargoCRDs[kind]}, crd); err != nil {
			if apierrors.IsNotFound(err) {
				missing = append(missing, kargoCRDs[kind])
				continue
			}
			return fail(CheckKargoCRDs, "grant this user get on customresourcedefinitions", "error reading CRD %s: %v", kargoCRDs[kind], err)
		}
		for _, v := range crd.Spec.Versions {
			if v.Name == "v1alpha1" && v.Schema != nil {
				maps.Copy(fields, SchemaFields(kind, v.Schema.OpenAPIV3Schema))
			}
		}
	}
	if len(missing) > 0 {
		return fail(CheckKargoCRDs, fix, "Kargo CRDs missing: %s", examples(missing))
	}
	status, version := KargoVersion(fields)
	if status != StatusOK {
		return warn(CheckKargoCRDs, "run Kargo v1.11.x, the version kargo-fleet is built and tested against",
			"Kargo CRDs installed; %s", version)
	}
	return ok(CheckKargoCRDs, "Kargo CRDs installed; they %s", version)
}

func (d *Doctor) checkFleetCRDs(ctx context.Context) Result {
	const fix = "install the kargo-fleet Helm chart (or kubectl apply -f charts/kargo-fleet/files/crds/)"
	var missing, notReady []string
	for _, name := range fleetCRDs {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := d.c.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
			if apierrors.IsNotFound(err) {
				missing = append(missing, name)
				continue
			}
			return fail(CheckFleetCRDs, "grant this user get on customresourcedefinitions", "error reading CRD %s: %v", name, err)
		}
		established := slices.ContainsFunc(crd.Status.Conditions, func(c apiextensionsv1.CustomResourceDefinitionCondition) bool {
			return c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue
		})
		if !established {
			notReady = append(notReady, name)
		}
	}
	switch {
	case len(missing) > 0:
		return fail(CheckFleetCRDs, fix, "kargo-fleet CRDs missing: %s", examples(missing))
	case len(notReady) > 0:
		return fail(CheckFleetCRDs, "read the CRDs' conditions (kubectl describe crd)", "kargo-fleet CRDs not established: %s",
			examples(notReady))
	}
	return ok(CheckFleetCRDs, "kargo-fleet CRDs installed and established")
}

// checkPromotionTasks checks the fleet ClusterPromotionTasks exist and
// returns the step server URLs they call by default.
func (d *Doctor) checkPromotionTasks(ctx context.Context) (map[string][]string, Result) {
	const fix = "install the kargo-fleet Helm chart (or kubectl apply -f charts/kargo-fleet/tasks/)"
	urls := map[string][]string{}
	var missing []string
	for _, name := range FleetTasks {
		task := &kargo.ClusterPromotionTask{}
		if err := d.c.Get(ctx, client.ObjectKey{Name: name}, task); err != nil {
			if apierrors.IsNotFound(err) || isNoMatch(err) {
				missing = append(missing, name)
				continue
			}
			return nil, fail(CheckPromotionTasks, "grant this user get on clusterpromotiontasks", "error reading ClusterPromotionTask %s: %v", name, err)
		}
		for _, v := range task.Spec.Vars {
			if v.Name == serverURLVar {
				urls[v.Value] = append(urls[v.Value], name)
			}
		}
	}
	if len(missing) > 0 {
		return urls, fail(CheckPromotionTasks, fix, "ClusterPromotionTasks missing: %s", examples(missing))
	}
	return urls, ok(CheckPromotionTasks, "ClusterPromotionTasks %s installed", examples(FleetTasks))
}

// checkStepServer checks the Services the tasks' server URLs name have
// ready endpoints.
func (d *Doctor) checkStepServer(ctx context.Context, urls map[string][]string) Result {
	if len(urls) == 0 {
		return warn(CheckStepServer, "install the ClusterPromotionTasks first", "no ClusterPromotionTask names a step server URL")
	}
	var good []string
	for _, u := range slices.Sorted(maps.Keys(urls)) {
		ref, inCluster := ServiceOf(u)
		if !inCluster {
			return warn(CheckStepServer, "make sure Kargo's controller can reach it from its Pods",
				"ClusterPromotionTasks %s call %s, which is not an in-cluster Service address: not checked", examples(urls[u]), u)
		}
		if res, ready := d.serviceReady(ctx, CheckStepServer, ref, "the kargo-fleet Deployment"); !ready {
			res.Message = fmt.Sprintf("ClusterPromotionTasks %s call %s: %s", examples(urls[u]), u, res.Message)
			return res
		}
		good = append(good, u)
	}
	return ok(CheckStepServer, "step server %s has ready endpoints", examples(good))
}

// serviceReady checks a Service exists and its EndpointSlices list a ready
// endpoint on the port.
func (d *Doctor) serviceReady(ctx context.Context, check string, ref ServiceRef, backend string) (Result, bool) {
	svc := &corev1.Service{}
	if err := d.c.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, svc); err != nil {
		if apierrors.IsNotFound(err) {
			return fail(check, "install the kargo-fleet Helm chart in namespace "+ref.Namespace,
				"Service %s/%s does not exist", ref.Namespace, ref.Name), false
		}
		return fail(check, "grant this user get on services", "error reading Service %s/%s: %v", ref.Namespace, ref.Name, err), false
	}
	slicesList := &discoveryv1.EndpointSliceList{}
	if err := d.c.List(ctx, slicesList, client.InNamespace(ref.Namespace),
		client.MatchingLabels{discoveryv1.LabelServiceName: ref.Name}); err != nil {
		return fail(check, "grant this user list on endpointslices", "error listing EndpointSlices of Service %s/%s: %v",
			ref.Namespace, ref.Name, err), false
	}
	ready := readyEndpoints(slicesList.Items)
	if ready == 0 {
		return fail(check, fmt.Sprintf("check the Pods of %s in namespace %s (kubectl -n %s get pods)", backend, ref.Namespace, ref.Namespace),
			"Service %s/%s has no ready endpoint", ref.Namespace, ref.Name), false
	}
	return ok(check, "Service %s/%s has %d ready endpoint(s)", ref.Namespace, ref.Name, ready), true
}

// readyEndpoints counts the ready endpoints of EndpointSlices (a nil Ready
// condition means ready).
func readyEndpoints(items []discoveryv1.EndpointSlice) int {
	n := 0
	for i := range items {
		for _, ep := range items[i].Endpoints {
			if ep.Conditions.Ready == nil || *ep.Conditions.Ready {
				n++
			}
		}
	}
	return n
}

func (d *Doctor) checkController(ctx context.Context, rel Release, found bool, locateErr error) Result {
	switch {
	case errors.Is(locateErr, errListingDeployments):
		return fail(CheckController, "grant this user list on deployments (or pass --controller-namespace to search one namespace)",
			"%v", locateErr)
	case locateErr != nil:
		return fail(CheckController, "name the release to check with --release (and --controller-namespace to search one namespace)",
			"%v", locateErr)
	}
	ns := rel.Namespace
	fix := fmt.Sprintf("check the kargo-fleet controller Pods (kubectl -n %s get pods -l %s=%s; kubectl -n %s logs deploy/%s)",
		ns, LabelInstance, rel.Name, ns, rel.Deployment)
	if !found {
		fix += "; pass --release and --controller-namespace if kargo-fleet runs elsewhere"
	}
	lease := &coordinationv1.Lease{}
	if err := d.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: LeaseName}, lease); err != nil {
		if apierrors.IsNotFound(err) {
			return fail(CheckController, fix, "no Lease %s/%s: no kargo-fleet controller has led in namespace %s", ns, LeaseName, ns)
		}
		return fail(CheckController, "grant this user get on leases in "+ns, "error reading Lease %s/%s: %v", ns, LeaseName, err)
	}
	holder := ""
	if lease.Spec.HolderIdentity != nil {
		holder = *lease.Spec.HolderIdentity
	}
	var renew *time.Time
	if lease.Spec.RenewTime != nil {
		renew = &lease.Spec.RenewTime.Time
	}
	var duration time.Duration
	if lease.Spec.LeaseDurationSeconds != nil {
		duration = time.Duration(*lease.Spec.LeaseDurationSeconds) * time.Second
	}
	status, msg := LeaseVerdict(holder, renew, duration, d.opts.Now)
	if status != StatusOK {
		return fail(CheckController, fix, "controller: %s", msg)
	}
	if !found {
		return ok(CheckController, "controller leading in namespace %s (no kargo-fleet Deployment found: installed another way?): %s", ns, msg)
	}
	deploy := &appsv1.Deployment{}
	switch err := d.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: rel.Deployment}, deploy); {
	case err != nil:
		return fail(CheckController, "grant this user get on deployments in "+ns, "error reading Deployment %s/%s: %v", ns, rel.Deployment, err)
	case deploy.Status.ReadyReplicas == 0:
		return fail(CheckController, fix, "Deployment %s/%s has no ready replica (the Lease is still fresh: the leader just went away)",
			ns, rel.Deployment)
	}
	return ok(CheckController, "%s: controller ready (%d/%d replicas) and leading: %s", rel, deploy.Status.ReadyReplicas,
		deploy.Status.Replicas, msg)
}

// checkWebhook checks the release's ValidatingWebhookConfiguration, found
// by the release's label (or the chart's, when no Deployment told the
// release).
func (d *Doctor) checkWebhook(ctx context.Context, rel Release, found bool) Result {
	sel := client.MatchingLabels{LabelInstance: rel.Name}
	what := fmt.Sprintf("of release %q (label %s=%s)", rel.Name, LabelInstance, rel.Name)
	if !found && d.opts.Release == "" {
		sel = client.MatchingLabels{LabelName: ChartName}
		what = fmt.Sprintf("of kargo-fleet (label %s=%s)", LabelName, ChartName)
	}
	list := &admissionregistrationv1.ValidatingWebhookConfigurationList{}
	if err := d.c.List(ctx, list, sel); err != nil {
		return fail(CheckWebhook, "grant this user list on validatingwebhookconfigurations",
			"error listing ValidatingWebhookConfigurations: %v", err)
	}
	if len(list.Items) == 0 {
		return fail(CheckWebhook, WebhookEnableFix(rel), "no ValidatingWebhookConfiguration %s: invalid FleetStages and "+
			"FleetRollouts are not refused at admission", what)
	}
	var names []string
	for i := range list.Items {
		vwc := &list.Items[i]
		names = append(names, vwc.Name)
		if len(vwc.Webhooks) == 0 {
			return fail(CheckWebhook, WebhookEnableFix(rel), "ValidatingWebhookConfiguration %q has no webhook", vwc.Name)
		}
		for _, wh := range vwc.Webhooks {
			if len(wh.ClientConfig.CABundle) == 0 {
				return fail(CheckWebhook, CABundleFix(rel, vwc.Annotations[certManagerInjectAnnotation]),
					"webhook %s of %q has no caBundle: the API server cannot call it and refuses every FleetStage write", wh.Name, vwc.Name)
			}
			if s := wh.ClientConfig.Service; s != nil {
				port := int32(443)
				if s.Port != nil {
					port = *s.Port
				}
				if res, ready := d.serviceReady(ctx, CheckWebhook, ServiceRef{Namespace: s.Namespace, Name: s.Name, Port: port},
					"the kargo-fleet Deployment"); !ready {
					res.Message = fmt.Sprintf("webhook %s: %s", wh.Name, res.Message)
					return res
				}
			}
		}
	}
	return ok(CheckWebhook, "webhook configuration %s has a caBundle and reachable endpoints", examples(names))
}

// errListingDeployments marks a failure to list the controller Deployments.
var errListingDeployments = errors.New("error listing Deployments")

// certManagerInjectAnnotation asks cert-manager's CA injector to fill a
// webhook configuration's caBundle; the chart sets it in cert-manager mode.
const certManagerInjectAnnotation = "cert-manager.io/inject-ca-from"

func (d *Doctor) checkStepTokens(ctx context.Context) Result {
	list := &fleetv1alpha1.FleetStageList{}
	if err := d.c.List(ctx, list); err != nil {
		return fail(CheckStepTokens, "grant this user list on fleetstages in every namespace", "error listing FleetStages: %v", err)
	}
	projects := map[string]bool{}
	for i := range list.Items {
		projects[list.Items[i].Namespace] = true
	}
	if len(projects) == 0 {
		return ok(CheckStepTokens, "no FleetStage yet: no Project needs a step token")
	}
	var missing []string
	for _, ns := range slices.Sorted(maps.Keys(projects)) {
		sec := &corev1.Secret{}
		err := d.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: fleetv1alpha1.StepTokenSecretName}, sec)
		switch {
		case apierrors.IsNotFound(err):
			missing = append(missing, ns)
		case err != nil:
			return fail(CheckStepTokens, "grant this user get on secrets named "+fleetv1alpha1.StepTokenSecretName,
				"error reading Secret %s/%s: %v", ns, fleetv1alpha1.StepTokenSecretName, err)
		case len(sec.Data[fleetv1alpha1.StepTokenSecretKey]) == 0:
			missing = append(missing, ns+" (empty)")
		}
	}
	if len(missing) > 0 {
		return fail(CheckStepTokens, "the leading controller writes it within seconds: fix the controller check first",
			"Secret %s missing in Project(s) %s: the fleet steps will be refused", fleetv1alpha1.StepTokenSecretName, examples(missing))
	}
	return ok(CheckStepTokens, "step token Secret present in %d Project(s) with a FleetStage", len(projects))
}

// Reachable returns why the API server cannot be reached, nil when it
// answers: any answer counts, a refusal (401, 403, 404) included, since
// the checks say what it refuses. Without it every check would fail with
// the same network error, each looking like a problem of its own.
func (d *Doctor) Reachable(ctx context.Context) error {
	ns := &metav1.PartialObjectMetadata{}
	ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	err := d.c.Get(ctx, client.ObjectKey{Name: metav1.NamespaceDefault}, ns)
	var status apierrors.APIStatus
	if err == nil || errors.As(err, &status) {
		return nil
	}
	return err
}
