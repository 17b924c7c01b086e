package kargosim

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// Paths the simulator's webhook server serves.
const (
	// MutatePromotionPath serves the Promotion defaulting webhook.
	MutatePromotionPath = "/mutate-kargo-akuity-io-v1alpha1-promotion"
	// ValidatePromotionPath serves the Promotion validating webhook.
	ValidatePromotionPath = "/validate-kargo-akuity-io-v1alpha1-promotion"
	// ValidateStagePath serves the Stage validating webhook.
	ValidateStagePath = "/validate-kargo-akuity-io-v1alpha1-stage"
	// ValidateProjectPath serves the Project validating webhook.
	ValidateProjectPath = "/validate-kargo-akuity-io-v1alpha1-project"
)

// webhookService is the (nominal) Service the configurations name; envtest
// replaces it with its local serving address.
const (
	webhookServiceName      = "kargo-simulator-webhooks"
	webhookServiceNamespace = "kargo"
)

// WebhookConfigurations returns the admission webhook configurations that
// route Promotion and Stage admission to the simulator, as Kargo's chart
// installs them for its own webhooks: Promotions mutating on CREATE and
// UPDATE and validating on CREATE, UPDATE and DELETE; Stages validating on
// CREATE and UPDATE; all failing closed. Pass them to envtest
// (envtest.WithWebhooks) and serve them with Simulator.SetupWithManager.
func WebhookConfigurations() ([]*admissionregistrationv1.MutatingWebhookConfiguration,
	[]*admissionregistrationv1.ValidatingWebhookConfiguration) {
	rule := func(resource string, ops ...admissionregistrationv1.OperationType) []admissionregistrationv1.RuleWithOperations {
		scope := admissionregistrationv1.NamespacedScope
		if resource == "projects" {
			scope = admissionregistrationv1.ClusterScope
		}
		return []admissionregistrationv1.RuleWithOperations{{
			Operations: ops,
			Rule: admissionregistrationv1.Rule{
				APIGroups:   []string{kargo.GroupVersion.Group},
				APIVersions: []string{kargo.GroupVersion.Version},
				Resources:   []string{resource},
				Scope:       ptr.To(scope),
			},
		}}
	}
	client := func(path string) admissionregistrationv1.WebhookClientConfig {
		return admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
			Name: webhookServiceName, Namespace: webhookServiceNamespace, Path: ptr.To(path),
		}}
	}
	sideEffects := admissionregistrationv1.SideEffectClassNone
	noneOnDryRun := admissionregistrationv1.SideEffectClassNoneOnDryRun
	fail := admissionregistrationv1.Fail
	mutating := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "kargo-simulator"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:                    "promotion.kargo.akuity.io",
			ClientConfig:            client(MutatePromotionPath),
			Rules:                   rule("promotions", admissionregistrationv1.Create, admissionregistrationv1.Update),
			SideEffects:             &sideEffects,
			FailurePolicy:           &fail,
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr.To[int32](10),
		}},
	}
	validating := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "kargo-simulator"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:         "promotion.kargo.akuity.io",
			ClientConfig: client(ValidatePromotionPath),
			Rules: rule("promotions", admissionregistrationv1.Create, admissionregistrationv1.Update,
				admissionregistrationv1.Delete),
			SideEffects:             &sideEffects,
			FailurePolicy:           &fail,
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr.To[int32](10),
		}, {
			Name:                    "stage.kargo.akuity.io",
			ClientConfig:            client(ValidateStagePath),
			Rules:                   rule("stages", admissionregistrationv1.Create, admissionregistrationv1.Update),
			SideEffects:             &sideEffects,
			FailurePolicy:           &fail,
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr.To[int32](10),
		}, {
			// Kargo's Project webhook creates the Project's namespace: it has
			// side effects, which it does not perform on a dry run.
			Name:                    "project.kargo.akuity.io",
			ClientConfig:            client(ValidateProjectPath),
			Rules:                   rule("projects", admissionregistrationv1.Create),
			SideEffects:             &noneOnDryRun,
			FailurePolicy:           &fail,
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr.To[int32](10),
		}},
	}
	return []*admissionregistrationv1.MutatingWebhookConfiguration{mutating},
		[]*admissionregistrationv1.ValidatingWebhookConfiguration{validating}
}
