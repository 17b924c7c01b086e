package kargosim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// applicationGVK is Argo CD's Application kind, read as unstructured objects.
var applicationGVK = schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "Application"}

// errApplicationsNotServed says the cluster has no Argo CD Application kind.
var errApplicationsNotServed = errors.New("argoproj.io/v1alpha1 Application is not served")

// applicationReader finds Argo CD Applications. Both methods return
// errApplicationsNotServed when the kind does not exist; get returns nil
// for a missing Application.
type applicationReader interface {
	getApplication(ctx context.Context, namespace, name string) (*unstructured.Unstructured, error)
	listApplications(ctx context.Context, namespace string, selector labels.Selector) ([]unstructured.Unstructured, error)
	// recordSync writes on an Application what Kargo's sync of it and Argo
	// CD's run of that sync leave there.
	recordSync(ctx context.Context, app *unstructured.Unstructured, sync appSync) error
}

// argoCDUpdateStep is Kargo's argocd-update step: the Applications it
// names are checked against their kargo.akuity.io/authorized-stage
// annotation exactly as Kargo v1.11.2 does; the update and sync themselves
// are simulated (fault injection). Applications that do not exist as
// objects (or a cluster without the Application kind) leave the simulated
// outcome alone, so templates that name Applications nobody created keep
// working.
type argoCDUpdateStep struct {
	simulated simulatedStep
	apps      applicationReader
}

// argoCDAppUpdate is the part of an argocd-update "apps" entry that selects
// Applications.
type argoCDAppUpdate struct {
	Name      string                `json:"name"`
	Namespace string                `json:"namespace"`
	Selector  *metav1.LabelSelector `json:"selector"`
}

func (s argoCDUpdateStep) run(ctx context.Context, sc *stepContext) stepResult {
	apps, err := s.authorize(ctx, sc)
	if err != nil {
		return stepResult{status: kargo.StepErrored, err: err}
	}
	res := s.simulated.run(ctx, sc)
	if res.status != kargo.StepSucceeded && res.status != kargo.StepFailed {
		return res
	}
	// The step's outcome is the sync's: what the real step and Argo CD
	// leave on each Application it updated is written there, so readers of
	// Applications see what they would see on a real Argo CD.
	sync := appSync{promotion: sc.promo.promotion, actor: sc.promo.actor, revision: sc.promo.freight.Name,
		at: sc.now, succeeded: res.status == kargo.StepSucceeded}
	if res.err != nil {
		sync.message = res.err.Error()
	}
	for i := range apps {
		if err := s.apps.recordSync(ctx, &apps[i], sync); err != nil {
			return stepResult{status: kargo.StepErrored, err: err}
		}
	}
	return res
}

// authorize returns Kargo's error for the first "apps" entry whose existing
// Applications do not authorize the Promotion's Stage; else the existing
// Applications the step updates.
func (s argoCDUpdateStep) authorize(ctx context.Context, sc *stepContext) ([]unstructured.Unstructured, error) {
	raw, err := json.Marshal(sc.config["apps"])
	if err != nil {
		return nil, &terminalError{fmt.Errorf("error reading argocd-update apps: %w", err)}
	}
	var updates []argoCDAppUpdate
	if err := json.Unmarshal(raw, &updates); err != nil {
		return nil, &terminalError{fmt.Errorf("invalid argocd-update config: apps: %w", err)}
	}
	var all []unstructured.Unstructured
	for i := range updates {
		apps, err := s.authorizeUpdate(ctx, sc, &updates[i])
		if err != nil {
			if errors.Is(err, errApplicationsNotServed) {
				return nil, nil
			}
			return nil, err
		}
		all = append(all, apps...)
	}
	return all, nil
}

func (s argoCDUpdateStep) authorizeUpdate(ctx context.Context, sc *stepContext, u *argoCDAppUpdate) ([]unstructured.Unstructured, error) {
	ns := u.Namespace
	if ns == "" {
		ns = kargo.ArgoCDDefaultNamespace
	}
	project, stage := sc.promo.project, sc.promo.stage
	var apps []unstructured.Unstructured
	if u.Selector != nil {
		sel, err := metav1.LabelSelectorAsSelector(u.Selector)
		if err != nil {
			return nil, fmt.Errorf("error building label selector: %w", err)
		}
		if apps, err = s.apps.listApplications(ctx, ns, sel); err != nil {
			return nil, err
		}
	} else {
		app, err := s.apps.getApplication(ctx, ns, u.Name)
		if err != nil || app == nil {
			return nil, err
		}
		apps = append(apps, *app)
	}
	if len(apps) == 0 {
		return nil, nil
	}
	var authorized []unstructured.Unstructured
	for i := range apps {
		key := types.NamespacedName{Namespace: apps[i].GetNamespace(), Name: apps[i].GetName()}
		if err := kargo.AuthorizeStage(apps[i].GetAnnotations(), key, project, stage); err != nil {
			logger(ctx).Info("Skipping unauthorized Application", "app", key.Name, "namespace", key.Namespace,
				"reason", err.Error())
			continue
		}
		authorized = append(authorized, apps[i])
	}
	if len(authorized) > 0 {
		return authorized, nil
	}
	if u.Selector != nil {
		return nil, fmt.Errorf("found %d Application(s) matching selector in namespace %q, but none are authorized for Stage %s:%s",
			len(apps), ns, project, stage)
	}
	return nil, fmt.Errorf("Argo CD Application %q in namespace %q is not authorized", u.Name, ns) //nolint:staticcheck // Kargo's wording
}

// getApplication implements applicationReader, straight from the apiserver.
func (s *Simulator) getApplication(ctx context.Context, namespace, name string) (*unstructured.Unstructured, error) {
	app := &unstructured.Unstructured{}
	app.SetGroupVersionKind(applicationGVK)
	err := s.reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, app)
	switch {
	case meta.IsNoMatchError(err):
		return nil, errApplicationsNotServed
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("error finding Argo CD Application %q in namespace %q: %w", name, namespace, err)
	}
	return app, nil
}

// listApplications implements applicationReader, straight from the
// apiserver.
func (s *Simulator) listApplications(ctx context.Context, namespace string, selector labels.Selector) ([]unstructured.Unstructured, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(applicationGVK.GroupVersion().WithKind("ApplicationList"))
	err := s.reader.List(ctx, list, client.InNamespace(namespace), client.MatchingLabelsSelector{Selector: selector})
	switch {
	case meta.IsNoMatchError(err):
		return nil, errApplicationsNotServed
	case err != nil:
		return nil, fmt.Errorf("error listing Argo CD Applications matching selector: %w", err)
	}
	return list.Items, nil
}
