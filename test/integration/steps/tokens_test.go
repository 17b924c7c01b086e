//go:build integration

package steps_test

import (
	"context"
	"crypto/rand"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/stepserver"
	"github.com/kargo-fleet/kargo-fleet/internal/steptoken"
	"github.com/kargo-fleet/kargo-fleet/steps"
)

// tokenIssued returns a step token's issue time.
func tokenIssued(t *testing.T, token string) time.Time {
	t.Helper()
	parts := strings.Split(token, ".")
	require.Len(t, parts, 3, "a token is v2.<issued>.<mac>")
	sec, err := strconv.ParseInt(parts[1], 10, 64)
	require.NoError(t, err)
	return time.Unix(sec, 0)
}

// tokenSecret returns the token Secret of a project, or nil.
func tokenSecret(ctx context.Context, ns string) *corev1.Secret {
	var s corev1.Secret
	if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: fleetv1alpha1.StepTokenSecretName}, &s); err != nil {
		return nil
	}
	return &s
}

// setRevoked sets (or, with "", removes) the revocation annotation of a
// project namespace.
func setRevoked(t *testing.T, ns, value string) {
	t.Helper()
	ctx := context.Background()
	var n corev1.Namespace
	require.NoError(t, k8s.Get(ctx, client.ObjectKey{Name: ns}, &n))
	patch := client.MergeFrom(n.DeepCopy())
	if n.Annotations == nil {
		n.Annotations = map[string]string{}
	}
	n.Annotations[fleetv1alpha1.StepTokenRevokedAnnotation] = value
	if value == "" {
		delete(n.Annotations, fleetv1alpha1.StepTokenRevokedAnnotation)
	}
	require.NoError(t, k8s.Patch(ctx, &n, patch))
}

// TestTokens_lifecycle runs the minter of manager.New against the API
// server: a deleted token Secret is minted again within seconds, a Project
// is revoked and restored by annotation, and a rotated signing key re-mints
// every token while tokens of the previous key still verify.
func TestTokens_lifecycle(t *testing.T) {
	ctx := context.Background()
	f := newSecurityFixture(t)
	accepted := func(token string) int {
		status, resp := post(t, stepServer.URL, steps.WaveStepName, token, f.request())
		require.NotEqual(t, 401, status, resp.Message)
		return status
	}
	refused := func(token, reason string) {
		status, resp := post(t, stepServer.URL, steps.WaveStepName, token, f.request())
		require.Equal(t, 401, status, resp.Message)
		require.Equal(t, reason, resp.Error.Reason)
	}
	accepted(f.token)

	t.Run("a deleted token Secret is minted again within seconds", func(t *testing.T) {
		s := tokenSecret(ctx, f.ns)
		require.NotNil(t, s)
		require.NoError(t, k8s.Delete(ctx, s))
		require.Eventually(t, func() bool {
			again := tokenSecret(ctx, f.ns)
			return again != nil && again.UID != s.UID
		}, 5*time.Second, 20*time.Millisecond)
		f.token = projectToken(t, f.ns)
		accepted(f.token)
	})

	t.Run("a revoked project has no token until the annotation goes", func(t *testing.T) {
		setRevoked(t, f.ns, "true")
		require.Eventually(t, func() bool { return tokenSecret(ctx, f.ns) == nil }, 5*time.Second, 20*time.Millisecond,
			"the token Secret is deleted")
		require.Eventually(t, func() bool {
			status, _ := post(t, stepServer.URL, steps.WaveStepName, f.token, f.request())
			return status == 401
		}, 5*time.Second, 20*time.Millisecond)
		refused(f.token, stepserver.ReasonRevokedToken)
		time.Sleep(500 * time.Millisecond)
		require.Nil(t, tokenSecret(ctx, f.ns), "no token is minted while revoked")

		setRevoked(t, f.ns, "")
		f.token = projectToken(t, f.ns)
		accepted(f.token)
	})

	t.Run("a revocation time replaces the tokens issued before it", func(t *testing.T) {
		old := f.token
		// Issue times are whole seconds: revoke from the next one.
		at := time.Now().Truncate(time.Second).Add(time.Second)
		time.Sleep(time.Until(at))
		setRevoked(t, f.ns, at.UTC().Format(time.RFC3339))
		require.Eventually(t, func() bool {
			s := tokenSecret(ctx, f.ns)
			return s != nil && string(s.Data[fleetv1alpha1.StepTokenSecretKey]) != old
		}, 5*time.Second, 20*time.Millisecond, "a new token is minted at once")
		refused(old, stepserver.ReasonRevokedToken)
		f.token = projectToken(t, f.ns)
		accepted(f.token)
		setRevoked(t, f.ns, "")
	})

	t.Run("a rotated key re-mints every token and the previous key still verifies", func(t *testing.T) {
		var keySecret corev1.Secret
		ref := types.NamespacedName{Namespace: controllerNamespace, Name: steptoken.DefaultSigningKeySecret}
		require.NoError(t, k8s.Get(ctx, ref, &keySecret))
		previous := keySecret.Data[steptoken.SigningKeySecretKey]
		next := make([]byte, steptoken.MinSigningKeyBytes)
		_, err := rand.Read(next)
		require.NoError(t, err)
		keySecret.Data = map[string][]byte{steptoken.SigningKeySecretKey: next, steptoken.PreviousSigningKeySecretKey: previous}
		require.NoError(t, k8s.Update(ctx, &keySecret))

		old := f.token
		require.Eventually(t, func() bool {
			s := tokenSecret(ctx, f.ns)
			if s == nil {
				return false
			}
			tok := string(s.Data[fleetv1alpha1.StepTokenSecretKey])
			parts := strings.Split(tok, ".")
			if len(parts) != 3 {
				return false
			}
			sec, _ := strconv.ParseInt(parts[1], 10, 64)
			return tok == steptoken.Issue(next, f.ns, time.Unix(sec, 0))
		}, 5*time.Second, 20*time.Millisecond, "the token is re-minted under the new key")
		accepted(projectToken(t, f.ns))
		accepted(old)

		keySecret.Data = map[string][]byte{steptoken.SigningKeySecretKey: next}
		require.NoError(t, k8s.Update(ctx, &keySecret))
		refused(old, stepserver.ReasonBadToken)
	})
}
