// Package controller wires kargo-fleet's reconcilers and servers into a
// controller-runtime manager.
package controller

import (
	"fmt"

	apiruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/fleetstage/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/steps"
)

// NewScheme returns a scheme with every kind the controller reads or writes.
func NewScheme() *apiruntime.Scheme {
	s := apiruntime.NewScheme()
	for _, add := range []func(*apiruntime.Scheme) error{
		clientgoscheme.AddToScheme, fleetv1alpha1.AddToScheme, kargo.AddToScheme,
	} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}

// Setup registers every reconciler and server with the manager.
func Setup(mgr ctrl.Manager) error {
	if err := setupSteps(mgr); err != nil {
		return err
	}
	return nil
}

// setupSteps registers the step server, which runs on every replica, and the
// step token minter, which runs on the leader. Both are configured from the
// environment (steps.ServerOptionsFromEnv).
func setupSteps(mgr ctrl.Manager) error {
	opts, err := steps.ServerOptionsFromEnv()
	if err != nil {
		return fmt.Errorf("error configuring the step server: %w", err)
	}
	keys := steps.NewSecretKey(opts.SigningKeyFile, opts.SigningKeySecret, mgr.GetAPIReader(), mgr.GetClient())
	if opts.Enabled() {
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
	if err := steps.NewTokenMinter(mgr.GetClient(), mgr.GetAPIReader(), keys).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("error setting up the step token minter: %w", err)
	}
	return nil
}
