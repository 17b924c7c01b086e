package webhook

import (
	"fmt"
	"regexp"

	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/audit"
	"github.com/kargo-fleet/kargo-fleet/internal/inventory"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/kargoevents"
	"github.com/kargo-fleet/kargo-fleet/internal/personrights"
	"github.com/kargo-fleet/kargo-fleet/internal/policyread"
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
	// KargoGlobalServiceAccountNamespaces are the namespaces besides a
	// Project's where Kargo's API server maps OIDC claims onto
	// ServiceAccounts (its GLOBAL_SERVICE_ACCOUNT_NAMESPACES).
	KargoGlobalServiceAccountNamespaces []string
	// ActsForOthers matches the user names that create Promotions for other
	// people (Kargo's control plane): break-glass is refused from them,
	// whatever RBAC grants them. nil: DefaultActsForOthers.
	ActsForOthers *regexp.Regexp
	// Audit, when set, records the guard's refusals in the fleets' audit
	// trails.
	Audit audit.Sink
}

// DefaultActsForOthers matches the ServiceAccounts of Kargo's control plane,
// in whatever namespace Kargo runs: its API server creates Promotions for
// every Kargo UI and CLI user, its controllers for auto-promotion.
var DefaultActsForOthers = kargo.ControlPlaneUsers

// PromotionGuardComponent is the source component of the Events the
// admission guard for Kargo Promotions records.
const PromotionGuardComponent = "kargo-fleet-promotion-guard"

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
	if err := ctrl.NewWebhookManagedBy(mgr, &fleetv1alpha1.FreightPolicy{}).WithValidator(FreightPolicyValidator{}).Complete(); err != nil {
		return fmt.Errorf("error setting up the FreightPolicy webhook: %w", err)
	}
	core, err := typedcorev1.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return fmt.Errorf("error creating the client of the Promotion guard's Events: %w", err)
	}
	refusals := kargoevents.NewAggregator(core, mgr.GetScheme(), PromotionGuardComponent)
	if err := mgr.Add(refusals); err != nil {
		return fmt.Errorf("error adding the Promotion guard's Event recorder: %w", err)
	}
	guard := NewPromotionGuard(mgr.GetClient(), access, o.ControllerUsername, admission.NewDecoder(mgr.GetScheme()), refusals).
		WithActsForOthers(o.ActsForOthers).WithPersonRights(PersonRights(mgr, o)).
		WithFreightPolicies(policyread.NewReader(mgr.GetClient(), mgr.GetAPIReader()),
			inventory.NewReader(mgr.GetClient()).WithNamespaces(o.InventoryNamespaces))
	if o.Audit != nil {
		guard = guard.WithAudit(o.Audit)
	}
	mgr.GetWebhookServer().Register(ValidatePromotionPath, &webhook.Admission{Handler: guard})
	mgr.GetWebhookServer().Register(PromotionGuardPath, &webhook.Admission{Handler: guard})
	return nil
}

// PersonRights returns how the rights of a person acting through Kargo's
// API server are looked up: their OIDC claims onto the ServiceAccounts of
// the Project and of Kargo's global ServiceAccount namespaces, each
// reviewed with a SubjectAccessReview, reading ServiceAccounts from the API
// server (the cache holds none).
func PersonRights(mgr ctrl.Manager, o Options) *personrights.Checker {
	c := personrights.NewChecker(mgr.GetAPIReader(), NewSubjectAccessReviewer(mgr.GetClient()))
	c.GlobalNamespaces = o.KargoGlobalServiceAccountNamespaces
	return c
}
