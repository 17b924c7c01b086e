package webhook

import (
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/inventory"
)

// Options configures the webhooks.
type Options struct {
	// InventoryNamespaces are the namespaces FleetStage sources may read
	// besides their own (the controller's --inventory-namespaces).
	InventoryNamespaces inventory.NamespacePolicy
	// ControllerUsername is the controller's own Kubernetes user name (the
	// controller's --controller-username): its FleetRollout requests are
	// trusted, because the step server makes them for Kargo Promotions that
	// Kargo authorised.
	ControllerUsername string
}

// Setup serves the FleetStage and FleetRollout validating webhooks and the
// admission guard for Kargo Promotions from the manager's webhook server.
func Setup(mgr ctrl.Manager, o Options) error {
	access := NewSubjectAccessReviewer(mgr.GetClient())
	fs := NewFleetStageValidator(mgr.GetClient(), access, o.InventoryNamespaces)
	if err := ctrl.NewWebhookManagedBy(mgr, &fleetv1alpha1.FleetStage{}).WithValidator(fs).Complete(); err != nil {
		return fmt.Errorf("error setting up the FleetStage webhook: %w", err)
	}
	ro := NewFleetRolloutValidator(mgr.GetClient(), access, o.ControllerUsername)
	if err := ctrl.NewWebhookManagedBy(mgr, &fleetv1alpha1.FleetRollout{}).WithValidator(ro).Complete(); err != nil {
		return fmt.Errorf("error setting up the FleetRollout webhook: %w", err)
	}
	guard := NewPromotionGuard(mgr.GetClient(), access, o.ControllerUsername, admission.NewDecoder(mgr.GetScheme()))
	mgr.GetWebhookServer().Register(ValidatePromotionPath, &webhook.Admission{Handler: guard})
	return nil
}
