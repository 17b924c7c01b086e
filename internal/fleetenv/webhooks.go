package fleetenv

import (
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kargo-fleet/kargo-fleet/internal/helmchart"
)

// PromotionGuardWebhooks returns the chart's webhooks for Kargo Promotions
// (the admission guard, with its namespace selector and failure policy),
// rendered for a release "kargo-fleet" in ControllerNamespace with values
// (nil: the defaults), as one ValidatingWebhookConfiguration named name.
// Their clientConfig names the chart's Service; envtest points it at its
// local webhook server.
func PromotionGuardWebhooks(name string, values map[string]any) (*admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	objs, err := helmchart.Render(helmchart.Release{Name: "kargo-fleet", Namespace: ControllerNamespace, Values: values})
	if err != nil {
		return nil, fmt.Errorf("error rendering the chart's webhooks: %w", err)
	}
	out := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	out.Name = name
	for _, o := range objs {
		if o.GetKind() != "ValidatingWebhookConfiguration" {
			continue
		}
		cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, cfg); err != nil {
			return nil, fmt.Errorf("error decoding the chart's webhook configuration: %w", err)
		}
		for _, w := range cfg.Webhooks {
			if strings.HasSuffix(w.Name, "promotions.fleet.kargo-fleet.io") {
				out.Webhooks = append(out.Webhooks, w)
			}
		}
	}
	if len(out.Webhooks) == 0 {
		return nil, fmt.Errorf("the chart renders no webhook for Kargo Promotions")
	}
	return out, nil
}
