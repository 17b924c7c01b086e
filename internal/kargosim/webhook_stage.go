package kargosim

import (
	"context"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

var stageGroupKind = schema.GroupKind{Group: kargo.GroupVersion.Group, Kind: "Stage"}

// stageValidatingHandler plays the part of Kargo's Stage validating webhook
// that the CRD schema cannot express: a promotion-template step that
// references a task may have neither 'if' nor config.
type stageValidatingHandler struct {
	decoder admission.Decoder
}

// Handle refuses a created or updated Stage whose promotion template breaks
// the rule, with Kargo's messages and field paths.
func (h *stageValidatingHandler) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return admission.Allowed("")
	}
	stage := &kargo.Stage{}
	if err := h.decoder.DecodeRaw(req.Object, stage); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if stage.Spec.PromotionTemplate == nil {
		return admission.Allowed("")
	}
	errs := kargo.ValidateTaskSteps(field.NewPath("spec", "promotionTemplate", "spec", "steps"),
		stage.Spec.PromotionTemplate.Spec.Steps)
	if len(errs) == 0 {
		return admission.Allowed("")
	}
	logger(ctx).V(2).Info("Refusing Stage", "namespace", req.Namespace, "name", stage.Name, "reason", errs.ToAggregate().Error())
	status := apierrors.NewInvalid(stageGroupKind, stage.Name, errs).Status()
	return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: false, Result: &status}}
}
