package kargosim

import (
	"context"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// projectFinalizer is the finalizer Kargo puts on the namespaces it creates
// for Projects (its namespace reconciler clears it after the Project goes).
const projectFinalizer = "kargo.akuity.io/finalizer"

var projectGroupResource = schema.GroupResource{Group: kargo.GroupVersion.Group, Resource: "projects"}

// projectValidatingHandler is Kargo's Project webhook on CREATE: it makes
// sure the Project's namespace exists, creating it labelled as a Project
// namespace when it does not. Like Kargo's, it looks the namespace up in
// its informer cache, not the API server: a namespace created a moment
// before the Project may not be there yet, the webhook then tries to create
// it, and the create fails with AlreadyExists, which Kargo answers as an
// internal error (500). Scripts and tests that create the namespace first
// meet that on real Kargo; creating only the Project never does.
type projectValidatingHandler struct {
	sim     *Simulator
	decoder admission.Decoder
}

func (h *projectValidatingHandler) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create || (req.DryRun != nil && *req.DryRun) {
		return admission.Allowed("")
	}
	p := &kargo.Project{}
	if err := h.decoder.DecodeRaw(req.Object, p); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if err := ensureProjectNamespace(ctx, h.sim.client, p.Name); err != nil {
		logger(ctx).V(2).Info("Refusing Project", "name", p.Name, "reason", err.Error())
		status := err.(apierrors.APIStatus).Status() //nolint:errorlint // ensureProjectNamespace returns status errors only
		return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: false, Result: &status}}
	}
	return admission.Allowed("")
}

// ensureProjectNamespace makes the namespace of Project name exist, reading
// through c (the simulator's cached client) as Kargo does. Its errors are
// API status errors.
func ensureProjectNamespace(ctx context.Context, c client.Client, name string) error {
	ns := &corev1.Namespace{}
	err := c.Get(ctx, client.ObjectKey{Name: name}, ns)
	switch {
	case err == nil && ns.Labels[kargo.ProjectLabel] != "true":
		return apierrors.NewConflict(projectGroupResource, name, fmt.Errorf(
			"failed to initialize Project %q because namespace %q already exists and is not labeled as a Project namespace",
			name, name))
	case err == nil && ns.DeletionTimestamp != nil:
		return apierrors.NewConflict(projectGroupResource, name, fmt.Errorf(
			"failed to initialize Project %q because namespace %q is still being terminated", name, name))
	case err == nil:
		return nil
	case !apierrors.IsNotFound(err):
		return apierrors.NewInternalError(fmt.Errorf("error getting namespace %q: %w", name, err))
	}
	ns = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name:       name,
		Labels:     map[string]string{kargo.ProjectLabel: "true"},
		Finalizers: []string{projectFinalizer},
	}}
	if err := c.Create(ctx, ns); err != nil {
		return apierrors.NewInternalError(fmt.Errorf("error creating namespace %q: %w", name, err))
	}
	return nil
}
