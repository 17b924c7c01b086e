package webhook

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// AccessReviewer answers whether a user may act on a resource, as the API
// server's authorizer would.
type AccessReviewer interface {
	// Allowed reports whether user may do attrs.
	Allowed(ctx context.Context, user authenticationv1.UserInfo, attrs authorizationv1.ResourceAttributes) (bool, error)
}

// SubjectAccessReviewer implements AccessReviewer with SubjectAccessReviews,
// so every authorizer of the cluster (RBAC, and any webhook authorizer)
// answers, and Kargo's custom verb promote is checked the way Kargo's own
// webhooks check it. The controller's ClusterRole lets it create reviews
// (the marker below).
type SubjectAccessReviewer struct {
	client client.Client
}

// NewSubjectAccessReviewer returns a reviewer creating reviews with c.
func NewSubjectAccessReviewer(c client.Client) *SubjectAccessReviewer {
	return &SubjectAccessReviewer{client: c}
}

// Allowed implements AccessReviewer.
func (r *SubjectAccessReviewer) Allowed(
	ctx context.Context, user authenticationv1.UserInfo, attrs authorizationv1.ResourceAttributes,
) (bool, error) {
	extra := make(map[string]authorizationv1.ExtraValue, len(user.Extra))
	for k, v := range user.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		ResourceAttributes: &attrs,
		User:               user.Username,
		Groups:             user.Groups,
		UID:                user.UID,
		Extra:              extra,
	}}
	if err := r.client.Create(ctx, sar); err != nil {
		return false, fmt.Errorf("error creating SubjectAccessReview: %w", err)
	}
	return sar.Status.Allowed && !sar.Status.Denied, nil
}

// Actor returns how kargo-fleet and Kargo record a Kubernetes user as the
// actor of a change: "kubernetes:<username>" (Kargo's create-actor
// annotation, the CLI's SelfSubjectReview).
func Actor(username string) string { return "kubernetes:" + username }

// requestUser returns the user of the admission request in ctx.
func requestUser(ctx context.Context) (authenticationv1.UserInfo, error) {
	req, err := admission.RequestFromContext(ctx)
	if err != nil {
		return authenticationv1.UserInfo{}, fmt.Errorf("error reading the admission request: %w", err)
	}
	if req.UserInfo.Username == "" {
		return authenticationv1.UserInfo{}, errors.New("the admission request names no user")
	}
	return req.UserInfo, nil
}

// Environment variables naming the controller's ServiceAccount, from which
// DefaultControllerUsername derives the controller's user name.
const (
	// EnvPodNamespace is the controller's namespace (downward API).
	EnvPodNamespace = "POD_NAMESPACE"
	// EnvServiceAccountName is the controller's ServiceAccount (downward
	// API, spec.serviceAccountName).
	EnvServiceAccountName = "SERVICE_ACCOUNT_NAME"
	// defaultControllerNamespace and defaultServiceAccount are the chart's.
	defaultControllerNamespace  = "kargo-fleet"
	defaultServiceAccount       = "kargo-fleet"
	serviceAccountNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
)

// DefaultControllerUsername returns the Kubernetes user name of the
// controller's ServiceAccount,
// "system:serviceaccount:<POD_NAMESPACE>:<SERVICE_ACCOUNT_NAME>". The
// namespace falls back to the mounted ServiceAccount's, then "kargo-fleet";
// the ServiceAccount to "kargo-fleet" (the chart's names).
func DefaultControllerUsername() string {
	ns := os.Getenv(EnvPodNamespace)
	if ns == "" {
		if raw, err := os.ReadFile(serviceAccountNamespaceFile); err == nil {
			ns = strings.TrimSpace(string(raw))
		}
	}
	if ns == "" {
		ns = defaultControllerNamespace
	}
	sa := os.Getenv(EnvServiceAccountName)
	if sa == "" {
		sa = defaultServiceAccount
	}
	return "system:serviceaccount:" + ns + ":" + sa
}
