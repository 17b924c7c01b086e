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
	if err := s.authorize(ctx, sc); err != nil {
		return stepResult{status: kargo.StepErrored, err: err}
	}
	return s.simulated.run(ctx, sc)
}

// authorize returns Kargo's error for the first "apps" entry whose existing
// Applications do not authorize the Promotion's Stage.
func (s argoCDUpdateStep) authorize(ctx context.Context, sc *stepContext) error {
	raw, err := json.Marshal(sc.config["apps"])
	if err != nil {
		return &terminalError{fmt.Errorf("error reading argocd-update apps: %w", err)}
	}
	var updates []argoCDAppUpdate
	if err := json.Unmarshal(raw, &updates); err != nil {
		return &terminalError{fmt.Errorf("invalid argocd-update config: apps: %w", err)}
	}
	for i := range updates {
		if err := s.authorizeUpdate(ctx, sc, &updates[i]); err != nil {
			if errors.Is(err, errApplicationsNotServed) {
				return nil
			}
			return err
		}
	}
	return nil
}

func (s argoCDUpdateStep) authorizeUpdate(ctx context.Context, sc *stepContext, u *argoCDAppUpdate) error {
	ns := u.Namespace
	if ns == "" {
		ns = kargo.ArgoCDDefaultNamespace
	}
	project, stage := sc.promo.project, sc.promo.stage
	var apps []unstructured.Unstructured
	if u.Selector != nil {
		sel, err := metav1.LabelSelectorAsSelector(u.Selector)
		if err != nil {
			return fmt.Errorf("error building label selector: %w", err)
		}
		if apps, err = s.apps.listApplications(ctx, ns, sel); err != nil {
			return err
		}
	} else {
		app, err := s.apps.getApplication(ctx, ns, u.Name)
		if err != nil || app == nil {
			return err
		}
		apps = append(apps, *app)
	}
	if len(apps) == 0 {
		return nil
	}
	authorized := 0
	for i := range apps {
		key := types.NamespacedName{Namespace: apps[i].GetNamespace(), Name: apps[i].GetName()}
		if err := kargo.AuthorizeStage(apps[i].GetAnnotations(), key, project, stage); err != nil {
			logger(ctx).Info("Skipping unauthorized Application", "app", key.Name, "namespace", key.Namespace,
				"reason", err.Error())
			continue
		}
		authorized++
	}
	if authorized > 0 {
		return nil
	}
	if u.Selector != nil {
		return fmt.Errorf("found %d Application(s) matching selector in namespace %q, but none are authorized for Stage %s:%s",
			len(apps), ns, project, stage)
	}
	return fmt.Errorf("Argo CD Application %q in namespace %q is not authorized", u.Name, ns) //nolint:staticcheck // Kargo's wording
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
