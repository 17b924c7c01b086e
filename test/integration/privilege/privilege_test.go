//go:build integration

package privilege_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetrollout"
	"github.com/kargo-fleet/kargo-fleet/internal/helmchart"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
	"github.com/kargo-fleet/kargo-fleet/internal/stagerecord"
	"github.com/kargo-fleet/kargo-fleet/internal/steptoken"
	"github.com/kargo-fleet/kargo-fleet/internal/webhookcert"
)

const (
	wait = 60 * time.Second
	tick = 100 * time.Millisecond

	// Namespaces of the test: a fleet Project (a Kargo Project holding a
	// FleetStage, so labelled by the controller), a Kargo Project without
	// a FleetStage, a fleet Project whose guard an administrator turned
	// off, and a namespace that is no Project.
	fleetProject = "fleet-project"
	plainProject = "plain-project"
	offProject   = "off-project"
	noProject    = "no-project"
)

// Who refuses a write.
const (
	allowed = ""
	byRBAC  = "RBAC"
	// The admission policies, by the suffix of their rendered names.
	bySecrets    = "-controller-secrets"
	byNamespaces = "-controller-namespaces"
	byConfigMaps = "-controller-configmaps"
)

// setUp creates the test's namespaces, as an administrator, and waits until
// every admission policy is enforced.
func setUp(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	for name, labels := range map[string]map[string]string{
		fleetProject: {kargo.ProjectLabel: "true", fleetv1alpha1.PromotionGuardLabel: fleetv1alpha1.PromotionGuardEnforce},
		plainProject: {kargo.ProjectLabel: "true"},
		offProject:   {kargo.ProjectLabel: "true", fleetv1alpha1.PromotionGuardLabel: fleetv1alpha1.PromotionGuardOff},
		noProject:    nil,
	} {
		err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}})
		require.True(t, err == nil || apierrors.IsAlreadyExists(err), "%v", err)
		if err != nil {
			// Made by an earlier test: its labels again, whatever a
			// controller started by another test (leader_test.go) did to
			// them since.
			ns := &corev1.Namespace{}
			require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Name: name}, ns))
			ns.Labels = labels
			require.NoError(t, env.Client.Update(ctx, ns))
		}
	}
	awaitPolicies(t)
}

// awaitPolicies waits until the API server enforces every rendered policy:
// a known-bad dry-run write is refused by that policy. (Type-checking
// warnings are written to a policy's status by kube-controller-manager,
// which envtest does not run; the writes below exercise every rule.)
func awaitPolicies(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	probes := map[string]func() error{
		bySecrets: func() error {
			return controller.Create(ctx, serviceAccountToken(metav1.NamespaceSystem, fleetv1alpha1.StepTokenSecretName), client.DryRunAll)
		},
		byNamespaces: func() error {
			return patchLabels(ctx, fleetProject, map[string]any{"pod-security.kubernetes.io/enforce": "privileged"}, client.DryRunAll)
		},
		byConfigMaps: func() error {
			return controller.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
				Namespace: metav1.NamespaceSystem, Name: "probe"}}, client.DryRunAll)
		},
	}
	for suffix, probe := range probes {
		require.Eventually(t, func() bool {
			err := probe()
			return err != nil && strings.Contains(err.Error(), policyRefusal(suffix))
		}, wait, tick, "policy *%s is not enforced", suffix)
	}
}

// policyRefusal is how the API server names a refusal by a rendered policy.
func policyRefusal(suffix string) string {
	name := helmchart.Find(objs, "ValidatingAdmissionPolicy", suffix).GetName()
	return fmt.Sprintf("ValidatingAdmissionPolicy '%s' with binding '%s' denied request", name, name)
}

// requireRefusal checks who refused a write, and with which message.
func requireRefusal(t *testing.T, err error, by, message string) {
	t.Helper()
	switch by {
	case allowed:
		require.NoError(t, err)
	case byRBAC:
		require.True(t, apierrors.IsForbidden(err), "want RBAC's Forbidden, got %v", err)
		require.NotContains(t, err.Error(), "ValidatingAdmissionPolicy")
		require.Contains(t, err.Error(), message)
	default:
		require.True(t, apierrors.IsForbidden(err), "want the policy's Forbidden, got %v", err)
		require.Contains(t, err.Error(), policyRefusal(by))
		require.Contains(t, err.Error(), message)
	}
}

func TestWritesBeyondItsPurposeAreRefused(t *testing.T) {
	setUp(t)
	ctx := context.Background()
	// Objects someone else made: an Opaque Secret under the token's name
	// where no token belongs, and a Project's own Secret.
	for _, s := range []*corev1.Secret{
		opaque(metav1.NamespaceSystem, fleetv1alpha1.StepTokenSecretName, nil),
		opaque(fleetProject, "db-password", nil),
	} {
		require.NoError(t, env.Client.Create(ctx, s))
	}
	const (
		secretPlace = "kargo-fleet writes no Secret but kargo-fleet-step-token in a Kargo Project namespace holding a FleetStage"
		secretType  = "never a kubernetes.io/service-account-token Secret"
		secretOwned = "kargo-fleet deletes no Secret but the step tokens it minted"
		nsLabel     = "kargo-fleet changes no namespace label but fleet.kargo-fleet.io/promotion-guard"
		nsOther     = "kargo-fleet changes no namespace annotation, finalizer or owner reference"
		nsGuard     = "kargo-fleet only sets fleet.kargo-fleet.io/promotion-guard=enforce on a Kargo Project namespace"
		cmPlace     = "kargo-fleet creates ConfigMaps only in a Kargo Project namespace holding a FleetStage"
		cmShape     = "kargo-fleet creates only its own immutable ConfigMaps"
	)
	tests := []struct {
		name    string
		request func() error
		by      string
		message string
	}{
		{
			name: "a ServiceAccount token Secret named as a step token in kube-system",
			request: func() error {
				return controller.Create(ctx, serviceAccountToken(metav1.NamespaceSystem, fleetv1alpha1.StepTokenSecretName))
			},
			by: bySecrets, message: secretPlace,
		},
		{
			name: "a ServiceAccount token Secret named as a step token in a fleet Project",
			request: func() error {
				return controller.Create(ctx, serviceAccountToken(fleetProject, fleetv1alpha1.StepTokenSecretName))
			},
			by: bySecrets, message: secretType,
		},
		{
			name: "a ServiceAccount token Secret named as its signing key in its own namespace",
			request: func() error {
				return controller.Create(ctx, serviceAccountToken(releaseNamespace, own.signingKey))
			},
			by: bySecrets, message: secretType,
		},
		{
			name: "its signing key's Secret of another type",
			request: func() error {
				s := opaque(releaseNamespace, own.signingKey, nil)
				s.Type = corev1.SecretTypeDockerConfigJson
				s.Data = map[string][]byte{corev1.DockerConfigJsonKey: []byte("{}")}
				return controller.Create(ctx, s)
			},
			by: bySecrets, message: secretType,
		},
		{
			name: "its webhook certificate's Secret as Opaque",
			request: func() error {
				return controller.Create(ctx, opaque(releaseNamespace, own.webhookTLS, nil))
			},
			by: bySecrets, message: secretType,
		},
		{
			name: "an Opaque step token in a namespace that is no Kargo Project",
			request: func() error {
				return controller.Create(ctx, opaque(noProject, fleetv1alpha1.StepTokenSecretName, minted()))
			},
			by: bySecrets, message: secretPlace,
		},
		{
			name: "an Opaque step token in a Kargo Project without a FleetStage",
			request: func() error {
				return controller.Create(ctx, opaque(plainProject, fleetv1alpha1.StepTokenSecretName, minted()))
			},
			by: bySecrets, message: secretPlace,
		},
		{
			name:    "a Secret of another name in a fleet Project",
			request: func() error { return controller.Create(ctx, opaque(fleetProject, "app-credentials", nil)) },
			by:      bySecrets, message: secretPlace,
		},
		{
			name:    "a Secret of another name in its own namespace",
			request: func() error { return controller.Create(ctx, opaque(releaseNamespace, "app-credentials", nil)) },
			by:      bySecrets, message: secretPlace,
		},
		{
			name: "an update of a Secret named as a step token in kube-system",
			request: func() error {
				s := &corev1.Secret{}
				if err := controller.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: fleetv1alpha1.StepTokenSecretName}, s); err != nil {
					return err
				}
				s.Data = map[string][]byte{fleetv1alpha1.StepTokenSecretKey: []byte("forged")}
				return controller.Update(ctx, s)
			},
			by: bySecrets, message: secretPlace,
		},
		{
			name: "a delete of a Secret named as a step token that it did not mint",
			request: func() error {
				return controller.Delete(ctx, opaque(metav1.NamespaceSystem, fleetv1alpha1.StepTokenSecretName, nil))
			},
			by: bySecrets, message: secretOwned,
		},
		{
			name: "a read of a Project's Secret",
			request: func() error {
				return controller.Get(ctx, client.ObjectKey{Namespace: fleetProject, Name: "db-password"}, &corev1.Secret{})
			},
			by: byRBAC, message: `cannot get resource "secrets"`,
		},
		{
			name: "Pod Security's enforce label on a fleet Project",
			request: func() error {
				return patchLabels(ctx, fleetProject, map[string]any{"pod-security.kubernetes.io/enforce": "privileged"})
			},
			by: byNamespaces, message: nsLabel,
		},
		{
			name: "Pod Security's enforce label beside its own label",
			request: func() error {
				return patchLabels(ctx, plainProject, map[string]any{
					fleetv1alpha1.PromotionGuardLabel: fleetv1alpha1.PromotionGuardEnforce, "pod-security.kubernetes.io/enforce": "privileged"})
			},
			by: byNamespaces, message: nsLabel,
		},
		{
			name:    "Kargo's Project label on a namespace",
			request: func() error { return patchLabels(ctx, noProject, map[string]any{kargo.ProjectLabel: "true"}) },
			by:      byNamespaces, message: nsLabel,
		},
		{
			name:    "removing Kargo's Project label",
			request: func() error { return patchLabels(ctx, plainProject, map[string]any{kargo.ProjectLabel: nil}) },
			by:      byNamespaces, message: nsLabel,
		},
		{
			name: "a namespace annotation",
			request: func() error {
				return controller.Patch(ctx, namespace(fleetProject), client.RawPatch(types.MergePatchType,
					[]byte(`{"metadata":{"annotations":{"scheduler.alpha.kubernetes.io/node-selector":"pool=system"}}}`)))
			},
			by: byNamespaces, message: nsOther,
		},
		{
			name:    "its own label on a namespace that is no Kargo Project",
			request: setGuard(noProject, fleetv1alpha1.PromotionGuardEnforce),
			by:      byNamespaces, message: nsGuard,
		},
		{
			name:    "its own label set to off",
			request: setGuard(fleetProject, fleetv1alpha1.PromotionGuardOff),
			by:      byNamespaces, message: nsGuard,
		},
		{
			name:    "its own label set to an empty value",
			request: setGuard(plainProject, ""),
			by:      byNamespaces, message: nsGuard,
		},
		{
			name:    "an administrator's off turned to enforce",
			request: setGuard(offProject, fleetv1alpha1.PromotionGuardEnforce),
			by:      byNamespaces, message: nsGuard,
		},
		{
			name:    "an administrator's off removed",
			request: setGuard(offProject, nil),
			by:      byNamespaces, message: nsGuard,
		},
		{
			name:    "a Stage record in kube-system",
			request: func() error { return create(stageRecord(metav1.NamespaceSystem)) },
			by:      byConfigMaps, message: cmPlace,
		},
		{
			name:    "a Stage record in a Kargo Project without a FleetStage",
			request: func() error { return create(stageRecord(plainProject)) },
			by:      byConfigMaps, message: cmPlace,
		},
		{
			name: "a ConfigMap of its own shape but mutable",
			request: func() error {
				return create(stageRecord(fleetProject, func(cm *corev1.ConfigMap) { cm.Immutable = nil }))
			},
			by: byConfigMaps, message: cmShape,
		},
		{
			name: "a ConfigMap of another name and data in a fleet Project",
			request: func() error {
				return controller.Create(ctx, &corev1.ConfigMap{
					ObjectMeta: metav1.ObjectMeta{Namespace: fleetProject, Name: "app-config"},
					Data:       map[string]string{"endpoint": "https://attacker.example"},
				})
			},
			by: byConfigMaps, message: cmShape,
		},
		{
			name: "a plan snapshot under another rollout's name",
			request: func() error {
				return create(planSnapshot(fleetProject, func(cm *corev1.ConfigMap) { cm.Name = fleetrollout.SnapshotName("other") }))
			},
			by: byConfigMaps, message: cmShape,
		},
		{
			name: "a ClusterRoleBinding",
			request: func() error {
				return controller.Create(ctx, &rbacv1.ClusterRoleBinding{
					ObjectMeta: metav1.ObjectMeta{Name: "escalate"},
					RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
					Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: own.user}},
				})
			},
			by: byRBAC, message: `cannot create resource "clusterrolebindings"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			requireRefusal(t, tt.request(), tt.by, tt.message)
		})
	}

	// Nothing was minted in kube-system: a read brings back the Secret
	// someone else made, Opaque and unchanged, not a ServiceAccount's token.
	s := &corev1.Secret{}
	require.NoError(t, controller.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: fleetv1alpha1.StepTokenSecretName}, s))
	require.Equal(t, corev1.SecretTypeOpaque, s.Type)
	require.Equal(t, opaque("", "", nil).Data, s.Data)
	ns := &corev1.Namespace{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Name: fleetProject}, ns))
	require.NotContains(t, ns.Labels, "pod-security.kubernetes.io/enforce")
}

func TestWritesOfItsPurposeSucceed(t *testing.T) {
	setUp(t)
	ctx := context.Background()

	t.Run("the step token of a fleet Project: create, update, delete", func(t *testing.T) {
		token := opaque(fleetProject, fleetv1alpha1.StepTokenSecretName, minted())
		require.NoError(t, controller.Create(ctx, token))
		token.Data[fleetv1alpha1.StepTokenSecretKey] = []byte("renewed")
		require.NoError(t, controller.Update(ctx, token))
		require.NoError(t, controller.Delete(ctx, token))
	})

	t.Run("its own label on a Kargo Project: add, then remove", func(t *testing.T) {
		require.NoError(t, patchLabels(ctx, plainProject,
			map[string]any{fleetv1alpha1.PromotionGuardLabel: fleetv1alpha1.PromotionGuardEnforce}))
		ns := &corev1.Namespace{}
		require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Name: plainProject}, ns))
		require.Equal(t, fleetv1alpha1.PromotionGuardEnforce, ns.Labels[fleetv1alpha1.PromotionGuardLabel])
		require.NoError(t, patchLabels(ctx, plainProject, map[string]any{fleetv1alpha1.PromotionGuardLabel: nil}))
		require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Name: plainProject}, ns))
		require.NotContains(t, ns.Labels, fleetv1alpha1.PromotionGuardLabel)
	})

	t.Run("its own label over a value not its own: set to enforce", func(t *testing.T) {
		require.NoError(t, env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "odd-project",
			Labels: map[string]string{kargo.ProjectLabel: "true", fleetv1alpha1.PromotionGuardLabel: "audit"}}}))
		require.NoError(t, patchLabels(ctx, "odd-project",
			map[string]any{fleetv1alpha1.PromotionGuardLabel: fleetv1alpha1.PromotionGuardEnforce}))
	})

	t.Run("a Stage record and a plan snapshot in a fleet Project", func(t *testing.T) {
		require.NoError(t, create(stageRecord(fleetProject)))
		require.NoError(t, create(planSnapshot(fleetProject)))
	})

	t.Run("its signing key in its own namespace", func(t *testing.T) {
		keys := steptoken.NewSecretKey("", types.NamespacedName{Namespace: releaseNamespace, Name: own.signingKey},
			controller, controller)
		set, err := keys.SigningKeys(ctx)
		require.NoError(t, err)
		require.NotEmpty(t, set.Current)
	})

	t.Run("its generated certificates in its own namespace: create, renew", func(t *testing.T) {
		for _, name := range []string{own.webhookTLS, own.stepsTLS, own.metricsTLS} {
			m := &webhookcert.Manager{Client: controller, Secret: types.NamespacedName{Namespace: releaseNamespace, Name: name},
				Service: "svc", CertDir: t.TempDir(), Clock: clock.RealClock{}}
			require.NoError(t, m.Ensure(ctx), name)
			s := &corev1.Secret{}
			require.NoError(t, controller.Get(ctx, client.ObjectKey{Namespace: releaseNamespace, Name: name}, s))
			require.Equal(t, corev1.SecretTypeTLS, s.Type)
			s.Data[corev1.TLSCertKey] = append(s.Data[corev1.TLSCertKey], '\n')
			require.NoError(t, controller.Update(ctx, s), name)
		}
	})
}

// serviceAccountToken is a Secret the token controller would fill with a
// token of kube-system's default ServiceAccount.
func serviceAccountToken(namespace, name string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name,
			Annotations: map[string]string{corev1.ServiceAccountNameKey: "default"}},
		Type: corev1.SecretTypeServiceAccountToken,
	}
}

// opaque is an Opaque Secret with labels.
func opaque(namespace, name string, labels map[string]string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{fleetv1alpha1.StepTokenSecretKey: []byte("token")},
	}
}

// minted are the labels of a step token the controller minted.
func minted() map[string]string {
	return map[string]string{steptoken.ManagedByLabel: steptoken.ManagedByValue}
}

func namespace(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

// patchLabels patches a namespace's labels as the controller, the way its
// namespace labeler does (a JSON merge patch; nil removes a label).
func patchLabels(ctx context.Context, name string, labels map[string]any, opts ...client.PatchOption) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels}})
	if err != nil {
		return err
	}
	return controller.Patch(ctx, namespace(name), client.RawPatch(types.MergePatchType, patch), opts...)
}

// create creates a ConfigMap as the controller, unless building it failed.
func create(cm *corev1.ConfigMap, err error) error {
	if err != nil {
		return err
	}
	return controller.Create(context.Background(), cm)
}

// setGuard is a request of the controller setting its label on a namespace
// to value (nil removes it).
func setGuard(name string, value any) func() error {
	return func() error {
		return patchLabels(context.Background(), name, map[string]any{fleetv1alpha1.PromotionGuardLabel: value})
	}
}

// stageRecord is a FleetStage's Stage record, as the controller builds it,
// then edited.
func stageRecord(namespace string, edits ...func(*corev1.ConfigMap)) (*corev1.ConfigMap, error) {
	fs := &fleetv1alpha1.FleetStage{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "fleet", UID: "fs-uid"}}
	cm, err := stagerecord.ConfigMap(fs, stagerecord.Record{Stages: map[string]types.UID{"fleet-eu-1": "stage-uid"}})
	if err != nil {
		return nil, err
	}
	for _, edit := range edits {
		edit(cm)
	}
	return cm, nil
}

// planSnapshot is a FleetRollout's plan snapshot, shaped as the rollout
// controller writes it (fleetrollouts.takeSnapshot), then edited.
func planSnapshot(namespace string, edits ...func(*corev1.ConfigMap)) (*corev1.ConfigMap, error) {
	raw, err := plan.EncodeSnapshot(&plan.WavePlan{Hash: "h"})
	if err != nil {
		return nil, err
	}
	immutable, controller := true, true
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: namespace, Name: fleetrollout.SnapshotName("fleet-1"),
			Labels: map[string]string{fleetv1alpha1.FleetStageLabel: "fleet", fleetv1alpha1.RolloutLabel: "fleet-1"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: fleetv1alpha1.GroupVersion.String(), Kind: "FleetRollout",
				Name: "fleet-1", UID: "ro-uid", Controller: &controller}},
		},
		Immutable:  &immutable,
		BinaryData: map[string][]byte{plan.SnapshotKey: raw},
	}
	for _, edit := range edits {
		edit(cm)
	}
	return cm, nil
}
