package versions

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

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
	"github.com/kargo-fleet/kargo-fleet/internal/kargoclient"
	"github.com/kargo-fleet/kargo-fleet/internal/kargoevents"
	"github.com/kargo-fleet/kargo-fleet/internal/strutil"
)

// ApplicationChangedReason is the reason of the Event recorded when a
// target's Argo CD Application shows a change the fleet did not make, or
// turned Degraded or Missing (Warning; Normal for a break-glass sync).
const ApplicationChangedReason = "ApplicationChanged"

// Applications reads the Argo CD Applications of target Stages and
// reports their changes.
type Applications interface {
	// InProject returns the Applications whose
	// kargo.akuity.io/authorized-stage names a Stage of project, by that
	// Stage's name: one read per refresh, not one per target.
	InProject(ctx context.Context, project string) (map[string][]*argocd.Application, error)
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
	actorOf := func(name string) (string, bool) {
		p := &kargo.Promotion{}
		if err := r.client.Get(ctx, client.ObjectKey{Namespace: fs.Namespace, Name: name}, p, client.UnsafeDisableDeepCopy); err != nil {
			return "", false
		}
		return p.Annotations[kargo.CreateActorAnnotation], true
	}
	byStage, err := r.apps.InProject(ctx, fs.Namespace)
	if err != nil {
		return nil, applicationsError(err)
	}
	var out []drift.ApplicationDrift
	for i := range stages {
		st := &stages[i]
		for _, app := range byStage[st.Name] {
			target := drift.TargetsOf(stages[i : i+1])[0].Name
			if d, ok := drift.ClassifyApplication(drift.ObservedApplication{Target: target, Stage: st.Name, App: app,
				Origins: origins, ActorOf: actorOf, Promoting: st.Status.CurrentPromotion != nil}); ok {
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

// applicationsRetry is how soon Applications that could not be read are
// read again.
const applicationsRetry = 30 * time.Second

// applicationDescriptionPrefix begins the description the version refresh
// writes on a target Stage whose Application shows a foreign or broken
// change: the Kargo UI shows a Stage's description in its drawer.
const applicationDescriptionPrefix = "Argo CD: "

// maxDescriptionWrites bounds the target Stage descriptions one reconcile
// writes: an Argo CD outage can turn thousands of Applications Degraded at
// once, and the rest are written by the next reconciles.
const maxDescriptionWrites = 20

// ApplicationDescription is the description of a target Stage whose
// Application shows d.
func ApplicationDescription(d drift.ApplicationDrift) string {
	return strutil.Ellipsis(fmt.Sprintf("%s%s %s (%s): %s", applicationDescriptionPrefix, d.Application, strings.ToLower(string(d.Class)),
		d.Reason, d.Message), 1024)
}

// describeApplications writes, on each target Stage whose Application shows
// a foreign or broken change, what it shows, and removes that description
// from the others. A description someone else wrote (a break-glass
// Promotion's, a user's) is left alone. It reports whether writes are left
// for the next reconcile.
func (r *Reconciler) describeApplications(ctx context.Context, stages []kargo.Stage, drifts []drift.ApplicationDrift) (bool, error) {
	want := make(map[string]string, len(drifts))
	for _, d := range drifts {
		if d.Class == drift.ClassIntended {
			continue
		}
		if _, ok := want[d.Stage]; !ok {
			want[d.Stage] = ApplicationDescription(d)
		}
	}
	writes := 0
	for i := range stages {
		st := &stages[i]
		cur, has := st.Annotations[kargo.DescriptionAnnotation]
		next := want[st.Name]
		if cur == next || (has && cur != "" && !strings.HasPrefix(cur, applicationDescriptionPrefix)) ||
			(next == "" && !has) {
			continue
		}
		if writes == maxDescriptionWrites {
			return true, nil
		}
		writes++
		if err := kargoclient.DescribeStage(ctx, r.client, st, next); err != nil {
			return false, err
		}
	}
	return false, nil
}

// publishApplications announces what the targets' Applications newly show
// and describes the target Stages; it reports whether descriptions are
// left for the next reconcile.
func (r *Reconciler) publishApplications(ctx context.Context, fs *fleetv1alpha1.FleetStage, stages []kargo.Stage,
	drifts []drift.ApplicationDrift) (bool, error) {
	if r.apps == nil {
		return false, nil
	}
	r.announceApplications(fs, drifts)
	return r.describeApplications(ctx, stages, drifts)
}
