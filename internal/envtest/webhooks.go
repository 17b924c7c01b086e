package envtest

import (
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// ValidatingWebhook returns a webhook configuration named name that sends
// CREATE and UPDATE of the resource to path on the local webhook server.
func ValidatingWebhook(name, group, version, resource, path string) *admissionregistrationv1.ValidatingWebhookConfiguration {
	return ValidatingWebhookFor(name, group, version, resource, path, admissionregistrationv1.Create, admissionregistrationv1.Update)
}

// ValidatingWebhookFor is ValidatingWebhook for the given operations (the
// chart sends DELETE of FleetRollouts too).
func ValidatingWebhookFor(name, group, version, resource, path string,
	ops ...admissionregistrationv1.OperationType) *admissionregistrationv1.ValidatingWebhookConfiguration {
	fail := admissionregistrationv1.Fail
	none := admissionregistrationv1.SideEffectClassNone
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		TypeMeta:   metaTypeValidating,
		ObjectMeta: objectMeta(name),
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    name,
			AdmissionReviewVersions: []string{"v1"},
			SideEffects:             &none,
			FailurePolicy:           &fail,
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Name: "local", Namespace: "default", Path: &path}},
			Rules:                   rules(group, version, resource, ops),
		}},
	}
}

// WaitForWebhookServer waits until srv accepts connections: a refused
// connection fails the admission of the first object a test creates.
func WaitForWebhookServer(srv webhook.Server, timeout time.Duration) error {
	check := srv.StartedChecker()
	deadline := time.Now().Add(timeout)
	for {
		err := check(nil)
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}
