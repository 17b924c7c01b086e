//go:build integration

package kargosim_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kargo-fleet/kargo-fleet/internal/envtest"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/kargosim"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

// scenario is an expect.yaml.
type scenario struct {
	Steps []struct {
		Promote *struct {
			Stage   string `json:"stage"`
			Freight string `json:"freight"`
		} `json:"promote"`
		Expect *struct {
			Phase string `json:"phase"`
			Error string `json:"error"`
		} `json:"expect"`
		Approve *struct {
			Stage   string `json:"stage"`
			Freight string `json:"freight"`
		} `json:"approve"`
		WaitFreight *struct {
			Name          string `json:"name"`
			VerifiedIn    string `json:"verifiedIn"`
			CurrentlyIn   string `json:"currentlyIn"`
			NotVerifiedIn string `json:"notVerifiedIn"`
		} `json:"waitFreight"`
		WaitStage *struct {
			Name           string `json:"name"`
			CurrentFreight string `json:"currentFreight"`
		} `json:"waitStage"`
	} `json:"steps"`
}

func TestScenarios(t *testing.T) {
	root := filepath.Join(envtest.RepoRoot(), "test", "scenarios", "kargosim")
	dirs, err := os.ReadDir(root)
	require.NoError(t, err)
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		t.Run(d.Name(), func(t *testing.T) { runScenario(t, filepath.Join(root, d.Name())) })
	}
}

func runScenario(t *testing.T, dir string) {
	ctx := context.Background()
	ns := applyObjects(t, filepath.Join(dir, "objects.yaml"))
	raw, err := os.ReadFile(filepath.Join(dir, "expect.yaml"))
	require.NoError(t, err)
	var sc scenario
	require.NoError(t, yaml.UnmarshalStrict(raw, &sc))
	const wait = 20 * time.Second
	for i, step := range sc.Steps {
		switch {
		case step.Promote != nil:
			require.NotNil(t, step.Expect, "step %d: promote needs expect", i)
			p, err := promote(ctx, k8s, ns, step.Promote.Stage, step.Promote.Freight, nil)
			if step.Expect.Error != "" {
				require.ErrorContains(t, err, step.Expect.Error, "step %d", i)
				continue
			}
			require.NoError(t, err, "step %d", i)
			want := kargo.PromotionPhase(step.Expect.Phase)
			got := testutil.Await(t, k8s, p, wait, func(p *kargo.Promotion) bool { return p.Status.Phase.IsTerminal() })
			require.Equal(t, want, got.Status.Phase, "step %d: %s", i, got.Status.Message)
		case step.Approve != nil:
			require.NoError(t, kargosim.Approve(ctx, k8s, client.ObjectKey{Namespace: ns, Name: step.Approve.Freight},
				step.Approve.Stage), "step %d", i)
		case step.WaitFreight != nil:
			w := step.WaitFreight
			testutil.Await(t, k8s, testutil.Named[kargo.Freight](ns, w.Name), wait, func(f *kargo.Freight) bool {
				_, cur := f.Status.CurrentlyIn[w.CurrentlyIn]
				return (w.VerifiedIn == "" || f.IsVerifiedIn(w.VerifiedIn)) &&
					(w.CurrentlyIn == "" || cur) &&
					(w.NotVerifiedIn == "" || !f.IsVerifiedIn(w.NotVerifiedIn))
			})
		case step.WaitStage != nil:
			w := step.WaitStage
			testutil.Await(t, k8s, testutil.Named[kargo.Stage](ns, w.Name), wait, func(s *kargo.Stage) bool {
				return slices.Contains(s.CurrentFreightNames(), w.CurrentFreight)
			})
		default:
			t.Fatalf("step %d: unknown step", i)
		}
	}
}

// applyObjects creates the objects of a multi-document YAML file in order
// and returns the namespace of the first namespaced one.
func applyObjects(t *testing.T, path string) string {
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	ns := ""
	for {
		var u unstructured.Unstructured
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			require.NoError(t, err)
		}
		if len(u.Object) == 0 {
			continue
		}
		require.NoError(t, k8s.Create(context.Background(), &u), "creating %s %s", u.GetKind(), u.GetName())
		if ns == "" && u.GetNamespace() != "" {
			ns = u.GetNamespace()
		}
	}
	require.NotEmpty(t, ns)
	return ns
}
