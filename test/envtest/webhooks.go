package envtest

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

// ValidatingWebhook returns a webhook configuration named name that sends
// CREATE and UPDATE of the resource to path on the local webhook server.
func ValidatingWebhook(name, group, version, resource, path string) *admissionregistrationv1.ValidatingWebhookConfiguration {
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
			Rules:                   rules(group, version, resource),
		}},
	}
}
