package kargosim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

var (
	promotionGroupKind     = schema.GroupKind{Group: kargo.GroupVersion.Group, Kind: "Promotion"}
	promotionGroupResource = schema.GroupResource{Group: kargo.GroupVersion.Group, Resource: "promotions"}
)

// actorOf is how Kargo names a Kubernetes user in annotations and events.
func actorOf(u authenticationv1.UserInfo) string {
	return kargo.ActorKubernetesPrefix + u.Username
}

// mutatingHandler plays Kargo's Promotion defaulting webhook.
type mutatingHandler struct {
	sim     *Simulator
	decoder admission.Decoder
}

// Handle renames a new Promotion, copies the Stage's steps and vars into it
// (expanding tasks), records the creating actor and the auto-promotion
// intent, and on every write sets the Stage label, annotation and owner.
func (h *mutatingHandler) Handle(ctx context.Context, req admission.Request) admission.Response {
	log := logger(ctx).WithValues("namespace", req.Namespace, "operation", req.Operation)
	promo := &kargo.Promotion{}
	if err := h.decoder.Decode(req, promo); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	before, err := json.Marshal(promo)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	if err := h.sim.defaultPromotion(ctx, req, promo, h.decoder); err != nil {
		var status apierrors.APIStatus
		if errors.As(err, &status) {
			log.V(2).Info("Refusing Promotion", "reason", err.Error())
			return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{
				Allowed: false, Result: ptrStatus(status.Status()),
			}}
		}
		return admission.Errored(http.StatusInternalServerError, err)
	}
	after, err := json.Marshal(promo)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	// The patch is computed between the typed views so that fields the
	// mirror does not know are left as they are.
	return admission.PatchResponseFromRaw(before, after)
}

func ptrStatus(s metav1.Status) *metav1.Status { return &s }

func (s *Simulator) defaultPromotion(ctx context.Context, req admission.Request, promo *kargo.Promotion,
	decoder admission.Decoder) error {
	if promo.Annotations == nil {
		promo.Annotations = map[string]string{}
	}
	stage, err := s.admissionStage(ctx, req.Namespace, promo.Spec.Stage)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	if stage == nil {
		return apierrors.NewInvalid(promotionGroupKind, promo.Name, field.ErrorList{field.Invalid(
			field.NewPath("spec", "stage"), promo.Spec.Stage,
			fmt.Sprintf("could not find Stage %q in namespace %q", promo.Spec.Stage, req.Namespace))})
	}
	controlPlane := s.opts.ControlPlaneUsers.MatchString(req.UserInfo.Username)
	switch req.Operation {
	case admissionv1.Create:
		promo.Name = promotionName(stage.Name, promo.Spec.Freight, s.ulids.make(s.opts.Clock.Now()))
		promo.GenerateName = ""
		if !controlPlane {
			promo.Annotations[kargo.CreateActorAnnotation] = actorOf(req.UserInfo)
		}
		setAbortActor(req, controlPlane, nil, promo)
		if stage.Spec.PromotionTemplate == nil || len(stage.Spec.PromotionTemplate.Spec.Steps) == 0 {
			return apierrors.NewInvalid(promotionGroupKind, promo.Name, field.ErrorList{field.Invalid(
				field.NewPath("spec", "stage"), promo.Spec.Stage,
				fmt.Sprintf("Stage %q in namespace %q defines no promotion steps", promo.Spec.Stage, req.Namespace))})
		}
		vars := append(append([]kargo.ExpressionVariable{}, stage.Spec.Vars...), stage.Spec.PromotionTemplate.Spec.Vars...)
		promo.Spec.Vars = vars
		steps, err := inflateSteps(ctx, s.getTask, req.Namespace, vars, stage.Spec.PromotionTemplate.Spec.Steps)
		if err != nil {
			err = fmt.Errorf("failed to inflate Promotion steps: %w", err)
			var status *apierrors.StatusError
			if errors.As(err, &status) {
				return status
			}
			return apierrors.NewInternalError(err)
		}
		promo.Spec.Steps = steps
		s.setHoldIntent(ctx, stage, promo)
	case admissionv1.Update:
		old := &kargo.Promotion{}
		if err := decoder.DecodeRaw(req.OldObject, old); err != nil {
			return apierrors.NewInternalError(fmt.Errorf("decode old object: %w", err))
		}
		for _, key := range []string{kargo.CreateActorAnnotation, kargo.AutoPromotionHoldAnnotation,
			kargo.AutoPromotionResumeAnnotation} {
			if v, ok := old.Annotations[key]; ok {
				promo.Annotations[key] = v
			} else {
				delete(promo.Annotations, key)
			}
		}
		setAbortActor(req, controlPlane, old, promo)
	}
	if promo.Labels == nil {
		promo.Labels = map[string]string{}
	}
	promo.Labels[kargo.StageLabel] = shortLabelValue(promo.Spec.Stage)
	// As Kargo's Promotion webhook: the Promotion goes to its Stage's shard.
	if stage.Spec.Shard != "" {
		promo.Labels[kargo.ShardLabel] = stage.Spec.Shard
	} else {
		delete(promo.Labels, kargo.ShardLabel)
	}
	promo.Annotations[kargo.StageAnnotation] = promo.Spec.Stage
	promo.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(stage,
		kargo.GroupVersion.WithKind("Stage"))}
	return nil
}

// shortLabelValue keeps a label value within 63 characters.
func shortLabelValue(v string) string {
	if len(v) <= 63 {
		return v
	}
	return v[:63]
}

// setAbortActor rewrites a new or changed abort request to JSON that names
// who asked.
func setAbortActor(req admission.Request, controlPlane bool, old, promo *kargo.Promotion) {
	abort, ok := kargo.AbortRequestOf(promo.Annotations)
	if !ok {
		return
	}
	if old != nil {
		if prev, ok := kargo.AbortRequestOf(old.Annotations); ok && reflect.DeepEqual(prev, abort) {
			return
		}
	}
	abort.ControlPlane = controlPlane
	if !controlPlane {
		abort.Actor = actorOf(req.UserInfo)
	}
	promo.Annotations[kargo.AbortAnnotation] = abort.String()
}

// setHoldIntent marks a Promotion into an auto-promoting Stage: promoting
// the auto-promotion candidate resumes auto-promotion of its origin, any
// other Freight holds it.
func (s *Simulator) setHoldIntent(ctx context.Context, stage *kargo.Stage, promo *kargo.Promotion) {
	log := logger(ctx)
	enabled, err := s.autoPromotionEnabledFor(ctx, stage)
	if err != nil || !enabled {
		if err != nil {
			log.Error(err, "Skipping auto-promotion intent annotation")
		}
		return
	}
	freight, err := s.cachedFreight(ctx, stage.Namespace, promo.Spec.Freight)
	if err != nil || freight == nil {
		return
	}
	available, err := s.availableFreightFor(ctx, stage)
	if err != nil {
		log.Error(err, "Skipping auto-promotion intent annotation")
		return
	}
	origin := freight.Origin.Key()
	candidate, ok := autoPromotionCandidates(stage, available)[origin]
	if ok && candidate.Name == promo.Spec.Freight {
		delete(promo.Annotations, kargo.AutoPromotionHoldAnnotation)
		promo.Annotations[kargo.AutoPromotionResumeAnnotation] = origin
		return
	}
	delete(promo.Annotations, kargo.AutoPromotionResumeAnnotation)
	promo.Annotations[kargo.AutoPromotionHoldAnnotation] = origin
}

// validatingHandler plays Kargo's Promotion validating webhook.
type validatingHandler struct {
	sim     *Simulator
	decoder admission.Decoder
}

// Handle checks the promote verb on every write and, on create, that the
// Freight is available to the Stage; the spec is immutable.
func (h *validatingHandler) Handle(ctx context.Context, req admission.Request) admission.Response {
	promo := &kargo.Promotion{}
	raw := req.Object
	if req.Operation == admissionv1.Delete {
		raw = req.OldObject
	}
	if err := h.decoder.DecodeRaw(raw, promo); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	err := h.sim.validatePromotion(ctx, req, promo, h.decoder)
	if err == nil {
		return admission.Allowed("")
	}
	logger(ctx).V(2).Info("Refusing Promotion", "namespace", req.Namespace, "name", promo.Name, "reason", err.Error())
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{
			Allowed: false, Result: ptrStatus(status.Status()),
		}}
	}
	return admission.Errored(http.StatusInternalServerError, err)
}

func (s *Simulator) validatePromotion(ctx context.Context, req admission.Request, promo *kargo.Promotion,
	decoder admission.Decoder) error {
	switch req.Operation {
	case admissionv1.Create:
		if err := s.validateProject(ctx, req.Namespace, promo.Name); err != nil {
			return err
		}
		if err := s.authorize(ctx, req, promo, "create"); err != nil {
			return apierrors.NewInternalError(err)
		}
		if promo.Spec.Freight == "" {
			return apierrors.NewInvalid(promotionGroupKind, promo.Name, field.ErrorList{field.Invalid(
				field.NewPath("spec"), promo.Spec, "exactly one of spec.freight or spec.origin must be set")})
		}
		stage, err := s.admissionStage(ctx, req.Namespace, promo.Spec.Stage)
		if err != nil {
			return apierrors.NewInternalError(fmt.Errorf("get stage: %w", err))
		}
		// From the cache, as Kargo's webhook reads it: verifiedIn and
		// approvedFor entries are never removed, so a cache a moment behind
		// can only refuse what a caller retries, never admit what it should
		// not.
		freight, err := s.cachedFreight(ctx, req.Namespace, promo.Spec.Freight)
		if err != nil {
			return apierrors.NewInternalError(fmt.Errorf("get freight: %w", err))
		}
		if !freightAvailable(stage, freight, s.opts.Clock.Now()) {
			return apierrors.NewInvalid(promotionGroupKind, promo.Name, field.ErrorList{field.Invalid(
				field.NewPath("spec", "freight"), promo.Spec.Freight, kargo.FreightNotAvailable)})
		}
	case admissionv1.Update:
		if err := s.authorize(ctx, req, promo, "update"); err != nil {
			return apierrors.NewInternalError(err)
		}
		old := &kargo.Promotion{}
		if err := decoder.DecodeRaw(req.OldObject, old); err != nil {
			return apierrors.NewInternalError(fmt.Errorf("decode old object: %w", err))
		}
		if !reflect.DeepEqual(promo.Spec, old.Spec) {
			return apierrors.NewInvalid(promotionGroupKind, promo.Name, field.ErrorList{field.Invalid(
				field.NewPath("spec"), promo.Spec, "spec is immutable")})
		}
	case admissionv1.Delete:
		return s.authorize(ctx, req, promo, "delete")
	}
	return nil
}

// validateProject refuses Promotions outside a Project namespace.
func (s *Simulator) validateProject(ctx context.Context, namespace, name string) error {
	var ns metav1.PartialObjectMetadata
	ns.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "Namespace"})
	if err := s.cacheFirst(ctx, keyOf("", namespace), &ns); err != nil {
		return apierrors.NewInternalError(fmt.Errorf("error getting namespace %q: %w", namespace, err))
	}
	if ns.Labels[kargo.ProjectLabel] != "true" {
		var p kargo.Project
		if err := s.cacheFirst(ctx, keyOf("", namespace), &p); err != nil {
			return apierrors.NewInvalid(promotionGroupKind, name, field.ErrorList{field.Invalid(
				field.NewPath("metadata", "namespace"), namespace,
				fmt.Sprintf("namespace %q does not belong to Kargo project", namespace))})
		}
	}
	return nil
}

// authorize asks the apiserver whether the requesting user may "promote"
// the Promotion's Stage.
func (s *Simulator) authorize(ctx context.Context, req admission.Request, promo *kargo.Promotion, action string) error {
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:   req.UserInfo.Username,
		Groups: req.UserInfo.Groups,
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Group: kargo.GroupVersion.Group, Resource: "stages", Name: promo.Spec.Stage,
			Verb: kargo.PromoteVerb, Namespace: promo.Namespace,
		},
	}}
	if err := s.client.Create(ctx, sar); err != nil {
		logger(ctx).Error(err, "Error creating SubjectAccessReview")
		return apierrors.NewForbidden(promotionGroupResource, promo.Name,
			fmt.Errorf("error creating SubjectAccessReview; refusing to %s Promotion", action))
	}
	if !sar.Status.Allowed {
		return apierrors.NewForbidden(promotionGroupResource, promo.Name, fmt.Errorf(
			"subject %q is not permitted to %s Promotions for Stage %q", req.UserInfo.Username, action, promo.Spec.Stage))
	}
	return nil
}
