// Package controller wires kargo-fleet's reconcilers and servers into a
// controller-runtime manager.
package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/fleetstage/api/v1alpha1"
	fscontroller "github.com/kargo-fleet/kargo-fleet/fleetstage/controller"
	fswebhook "github.com/kargo-fleet/kargo-fleet/fleetstage/webhook"
	"github.com/kargo-fleet/kargo-fleet/internal/inventory"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/steps"
)

// NewScheme returns a scheme with every kind the controller reads or writes.
func NewScheme() *apiruntime.Scheme {
	s := apiruntime.NewScheme()
	for _, add := range []func(*apiruntime.Scheme) error{
		clientgoscheme.AddToScheme, fleetv1alpha1.AddToScheme, kargo.AddToScheme, inventory.AddToScheme,
	} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}

// Options selects what Setup registers.
type Options struct {
	// Webhooks serves the FleetStage validating webhook from the manager's
	// webhook server (which needs a serving certificate).
	Webhooks bool
	// MaxConcurrentReconciles bounds parallel reconciles per controller.
	MaxConcurrentReconciles int
	// StepServerURL, when set, is the step server URL wave Stages pass to
	// the fleet-wave task (default: the task's in-cluster Service URL).
	StepServerURL string
	// StepServerOnly registers only the step server: a process that serves
	// Kargo's http steps without orchestrating (what every non-leader replica
	// does). The default registers everything.
	StepServerOnly bool
	// NoStepServer registers everything but the step server.
	NoStepServer bool
	// InventoryNamespaces are the namespaces FleetStage sources may read
	// inventory from besides the FleetStage's own; nil means
	// inventory.DefaultNamespaces (argocd).
	InventoryNamespaces []string
	// ControllerUsername is the controller's Kubernetes user name, whose
	// FleetRollout requests the webhook trusts; empty means
	// fswebhook.DefaultControllerUsername().
	ControllerUsername string
}

// CacheOptions returns the manager's cache options: Secrets are cached only
// when they are Argo CD cluster Secrets (the inventory), never the cluster's
// other Secrets; no cached object keeps its managedFields, which nothing
// here reads and which make up a third to a half of a Stage, a Promotion or
// a Freight held by thousands of Stages.
func CacheOptions() cache.Options {
	return cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Secret{}:   {Label: labels.SelectorFromSet(labels.Set{fscontroller.ArgoCDClusterSecretLabel: "cluster"})},
			&kargo.Promotion{}: {Transform: slimPromotion},
			&kargo.Stage{}:     {Transform: slimStage},
			&kargo.Freight{}:   {Transform: slimFreight},
		},
	}
}

// slimStage keeps of a cached Stage its metadata, spec and the status
// kargo-fleet reads (health, conditions, the current and previous Freight
// with their latest verification), and drops older Freight history and the
// Promotion statuses Kargo copies into it: a fleet holds one Stage per
// target, and the FleetStage controller compares only their specs.
func slimStage(obj any) (any, error) {
	s, ok := obj.(*kargo.Stage)
	if !ok {
		return obj, nil
	}
	s.ManagedFields = nil
	st := &s.Status
	if len(st.FreightHistory) > 2 {
		st.FreightHistory = st.FreightHistory[:2]
	}
	for i := range st.FreightHistory {
		if h := st.FreightHistory[i].VerificationHistory; len(h) > 1 {
			st.FreightHistory[i].VerificationHistory = h[:1]
		}
	}
	for _, p := range []*kargo.PromotionReference{st.LastPromotion, st.CurrentPromotion} {
		if p != nil {
			p.Status = nil
		}
	}
	return s, nil
}

// slimFreight keeps of a cached Freight everything but the Stages Kargo
// records it in and verified in: the cached Freight is read only for its
// approvals (steps read Freight from the API server), and those two maps hold
// one entry per Stage of the Project, about 1 MiB at 10,000 target Stages.
func slimFreight(obj any) (any, error) {
	f, ok := obj.(*kargo.Freight)
	if !ok {
		return obj, nil
	}
	f.ManagedFields = nil
	f.Status.CurrentlyIn, f.Status.VerifiedIn = nil, nil
	return f, nil
}

// slimPromotion keeps of a cached Promotion what kargo-fleet reads (its
// metadata, Stage, Freight, phase and message) and drops the steps, vars,
// step state and execution records Kargo copies into every one of them: a
// fleet rollout holds one Promotion per target, and those parts are most
// of a Promotion's size.
func slimPromotion(obj any) (any, error) {
	p, ok := obj.(*kargo.Promotion)
	if !ok {
		return obj, nil
	}
	p.ManagedFields = nil
	p.Spec.Steps, p.Spec.Vars = nil, nil
	p.Status.StepExecutionMetadata, p.Status.State, p.Status.FreightCollection = nil, nil, nil
	return p, nil
}

// Setup registers every reconciler and server with the manager.
func Setup(mgr ctrl.Manager, opts Options) error {
	if !opts.StepServerOnly {
		if err := setupFleetStages(mgr, opts); err != nil {
			return err
		}
	}
	return setupSteps(mgr, opts)
}

// setupFleetStages registers the FleetStage reconciler and, when asked, its
// validating webhook.
func setupFleetStages(mgr ctrl.Manager, opts Options) error {
	r := fscontroller.NewFleetStageReconciler(mgr.GetClient(), inventoryReader(mgr, opts),
		mgr.GetEventRecorder("kargo-fleet-fleetstage"), clock.RealClock{})
	r.StepServerURL = opts.StepServerURL
	if err := r.SetupWithManager(mgr, controller.Options{MaxConcurrentReconciles: max(1, opts.MaxConcurrentReconciles)}); err != nil {
		return fmt.Errorf("error setting up the FleetStage reconciler: %w", err)
	}
	rr := fscontroller.NewFleetRolloutReconciler(mgr.GetClient(), mgr.GetAPIReader(), inventoryReader(mgr, opts),
		mgr.GetEventRecorder("kargo-fleet-rollout"), clock.RealClock{}, refreshPromotion)
	if err := rr.SetupWithManager(mgr, controller.Options{MaxConcurrentReconciles: max(1, opts.MaxConcurrentReconciles)}); err != nil {
		return fmt.Errorf("error setting up the FleetRollout reconciler: %w", err)
	}
	if opts.Webhooks {
		if err := fswebhook.Setup(mgr, webhookOptions(opts)); err != nil {
			return err
		}
	}
	return nil
}

// refreshPromotion asks Kargo to poll a wave Promotion again at once, so the
// next wave starts about a second after this one passed instead of up to a
// pollInterval later.
func refreshPromotion(ctx context.Context, c client.Client, namespace, promotion string) error {
	return steps.RefreshPromotion(ctx, c, types.NamespacedName{Namespace: namespace, Name: promotion})
}

// setupSteps registers the step server, which runs on every replica, and the
// step token minter, which runs on the leader. Both are configured from the
// environment (steps.ServerOptionsFromEnv).
func setupSteps(mgr ctrl.Manager, o Options) error {
	opts, err := steps.ServerOptionsFromEnv()
	if err != nil {
		return fmt.Errorf("error configuring the step server: %w", err)
	}
	keys := steps.NewSecretKey(opts.SigningKeyFile, opts.SigningKeySecret, mgr.GetAPIReader(), mgr.GetClient())
	if opts.Enabled() && !o.NoStepServer {
		store := steps.NewAPIStore(mgr.GetClient(), mgr.GetAPIReader())
		server := steps.NewServer(opts, steps.ServerDeps{
			Reader:  mgr.GetAPIReader(),
			Keys:    keys,
			Steps:   steps.DefaultSteps(store, steps.NewPlanWindows(), clock.RealClock{}),
			Metrics: metrics.Registry,
			Clock:   clock.RealClock{},
		})
		if err := mgr.Add(server); err != nil {
			return fmt.Errorf("error adding the step server: %w", err)
		}
	}
	if o.StepServerOnly {
		return nil
	}
	if err := steps.NewTokenMinter(mgr.GetClient(), mgr.GetAPIReader(), keys).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("error setting up the step token minter: %w", err)
	}
	return nil
}
