//go:build integration

package api_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/yaml"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/fleetstage/api/v1alpha1"
	fswebhook "github.com/kargo-fleet/kargo-fleet/fleetstage/webhook"
	"github.com/kargo-fleet/kargo-fleet/test/envtest"
)

// TestExamplesAreAccepted admits every example FleetStage through the real
// apiserver (schema and CEL) and the webhook's validation.
func TestExamplesAreAccepted(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(envtest.RepoRoot(), "examples", "fleetstage", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			raw, err := os.ReadFile(f)
			require.NoError(t, err)
			fs := &fleetv1alpha1.FleetStage{}
			require.NoError(t, yaml.UnmarshalStrict(raw, fs))
			require.NoError(t, fswebhook.Validate(fs))
			ns := envtest.ProjectNamespace(fs.Namespace)
			if err := env.Client.Create(context.Background(), ns); !apierrors.IsAlreadyExists(err) {
				require.NoError(t, err)
			}
			require.NoError(t, env.Client.Create(context.Background(), fs))
		})
	}
}
