package versions

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/argocd"
	"github.com/kargo-fleet/kargo-fleet/internal/drift"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/kargoevents"
)

// ApplicationChangedReason: a target's Argo CD Application shows a change
// the fleet did not make, or turned Degraded or Missing (Warning; Normal
// for a break-glass sync).
const ApplicationChangedReason = "ApplicationChanged"

// Applications reads the Argo CD Applications of target Stages and
// reports their changes.
type Applications interface {
	// For returns the Applications whose kargo.akuity.io/authorized-stage
	// names stage of project.
	For(ctx context.Context, project, stage string) ([]*argocd.Application, error)
	// Source returns the watch of Applications that queues, through
	// toFleets, the FleetStages of the Projects an Application authorizes.
	Source(toFleets handler.MapFunc) source.Source
}

// WithApplications makes the reconciler read the targets' Argo CD
// Applications: what a target runs is then also read from the cluster's
// side, not only from Kargo's Stage.
func (r *Reconciler) WithApplications(a Applications) *Reconciler {
	r.apps = a
	return r
}

// observeApplications classifies the Applications of the recorded target
// Stages. A break-glass Promotion's sync is intended; the fleet's own and
// Promotions of the target Stage it does not know leave the Application to
// the Stage's own drift detection.
func (r *Reconciler) observeApplications(ctx context.Context, fs *fleetv1alpha1.FleetStage, stages []kargo.Stage,
	breakGlass []kargo.Promotion) ([]drift.ApplicationDrift, error) {
	if r.apps == nil {
		return nil, nil
	}
	origins := make(map[string]drift.Origin, len(breakGlass))
	for i := range breakGlass {
		origins[breakGlass[i].Name] = drift.OriginBreakGlass
	}
	var out []drift.ApplicationDrift
	for i := range stages {
		st := &stages[i]
		apps, err := r.apps.For(ctx, fs.Namespace, st.Name)
		if err != nil {
			return nil, err
		}
		for _, app := range apps {
			target := drift.TargetsOf(stages[i : i+1])[0].Name
			if d, ok := drift.ClassifyApplication(drift.ObservedApplication{Target: target, Stage: st.Name, App: app,
				Origins: origins}); ok {
				out = append(out, d)
			}
		}
	}
	return out, nil
}

// announceApplications records one Event per Application change, on the
// FleetStage and on the target Stage (Kargo's Events page), the first time
// it is seen.
func (r *Reconciler) announceApplications(fs *fleetv1alpha1.FleetStage, drifts []drift.ApplicationDrift) {
	fresh := r.appSeen.observe(client.ObjectKeyFromObject(fs), drifts)
	for _, d := range fresh[:min(len(fresh), maxDriftEvents)] {
		typ := corev1.EventTypeWarning
		if d.Class == drift.ClassIntended {
			typ = corev1.EventTypeNormal
		}
		r.eventAbout(fs, kargoevents.Stage(fs.Namespace, d.Stage), typ, ApplicationChangedReason,
			"Target %s: Argo CD Application %s (%s, %s): %s", d.Target, d.Application, d.Class, d.Reason, d.Message)
	}
	if rest := len(fresh) - maxDriftEvents; rest > 0 {
		r.event(fs, corev1.EventTypeWarning, ApplicationChangedReason,
			"%d more targets' Applications changed (status.applications counts them)", rest)
	}
}

// appMemory remembers, per FleetStage, the Application changes seen at the
// last reconcile, to announce only new ones.
type appMemory struct {
	mu sync.Mutex
	by map[types.NamespacedName]sets.Set[string]
}

// observe records the current changes and returns the new ones.
func (m *appMemory) observe(key types.NamespacedName, drifts []drift.ApplicationDrift) []drift.ApplicationDrift {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.by == nil {
		m.by = map[types.NamespacedName]sets.Set[string]{}
	}
	seen := m.by[key]
	current := sets.New[string]()
	var fresh []drift.ApplicationDrift
	for _, d := range drifts {
		k := d.Key()
		current.Insert(k)
		if !seen.Has(k) {
			fresh = append(fresh, d)
		}
	}
	m.by[key] = current
	return fresh
}

// forget drops a deleted FleetStage.
func (m *appMemory) forget(key types.NamespacedName) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.by, key)
}

// fleetsOfApplication maps an Application to the FleetStages of every
// Project its authorized-stage annotation names.
func (r *Reconciler) fleetsOfApplication(ctx context.Context, obj client.Object) []reconcile.Request {
	entries, err := kargo.AuthorizedStages(obj.GetAnnotations()[kargo.AuthorizedStageAnnotation])
	if err != nil {
		return nil
	}
	projects := sets.New[string]()
	for _, e := range entries {
		projects.Insert(e.Namespace)
	}
	var out []reconcile.Request
	for _, project := range sets.List(projects) {
		list := &fleetv1alpha1.FleetStageList{}
		if err := r.client.List(ctx, list, client.InNamespace(project), client.UnsafeDisableDeepCopy); err != nil {
			continue
		}
		for i := range list.Items {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return out
}

// applicationsError wraps an error reading Applications.
func applicationsError(err error) error {
	return fmt.Errorf("error reading Argo CD Applications: %w", err)
}
