package cli

import (
	"io"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/yaml"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/inventory"
)

// FuzzPlanFileInput: `plan -f … --local --targets …` reads a FleetStage and a
// target list, or names the file in its error. A FleetStage read is of
// kargo-fleet's kind and version, in the namespace given when it names
// none, and reads back the same once written; targets read back the same
// once written; an offline plan of what was read never fails but on an
// invalid spec, and plans no target it was not given. (Round trips compare
// the documents written: an empty map and no map are written alike.)
func FuzzPlanFileInput(f *testing.F) {
	for _, example := range []string{"../../examples/fleetstage/edge-inline.yaml", "../../examples/fleetstage/prod-fleet.yaml"} {
		raw, err := os.ReadFile(example)
		require.NoError(f, err)
		f.Add(string(raw), "- name: extra-1\n  labels: {region: eu}\n")
	}
	f.Add("kind: Stage\n---\napiVersion: fleet.kargo-fleet.io/v1alpha1\nkind: FleetStage\nmetadata: {name: x}\nspec: {}\n",
		"targets:\n- name: a\n")
	f.Add("kind: FleetStage\napiVersion: v1\n", "[]")
	f.Add("apiVersion: fleet.kargo-fleet.io/v1alpha1\nkind: FleetStage\nspec: {unknown: 1}\n", "{targets: 3}")
	f.Add("---\n- a\n---\n", "- {name: a, params: {x: y}}\n")
	f.Fuzz(func(t *testing.T, file, targets string) {
		const path, ns = "in.yaml", "shop"
		fs, err := decodeFleetStage([]byte(file), path, ns)
		if err != nil {
			require.Contains(t, err.Error(), path, "the error names the file")
		} else {
			require.Equal(t, "FleetStage", fs.Kind)
			require.Equal(t, fleetv1alpha1.GroupVersion.String(), fs.APIVersion)
			require.NotEmpty(t, fs.Namespace)
			raw, err := yaml.Marshal(fs)
			require.NoError(t, err)
			again, err := decodeFleetStage(raw, path, "elsewhere")
			require.NoError(t, err, "a FleetStage written back reads again:\n%s", raw)
			rawAgain, err := yaml.Marshal(again)
			require.NoError(t, err)
			require.Equal(t, string(raw), string(rawAgain), "and writes the same document again")
		}
		list, terr := decodeTargets([]byte(targets), "targets.yaml")
		if terr != nil {
			require.Contains(t, terr.Error(), "targets.yaml")
		} else {
			raw, err := yaml.Marshal(list)
			require.NoError(t, err)
			again, err := decodeTargets(raw, "targets.yaml")
			require.NoError(t, err)
			rawAgain, err := yaml.Marshal(again)
			require.NoError(t, err)
			// An empty labels or params map is written as none: compare
			// the documents, not the maps.
			require.Equal(t, string(raw), string(rawAgain), "targets written back read the same")
		}
		if err != nil || terr != nil {
			return
		}
		o := &planOptions{streams: genericiooptions.IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard}}
		p, err := o.planLocal(path, fs, list)
		if err != nil {
			require.Contains(t, err.Error(), "is invalid")
			return
		}
		given := map[string]bool{}
		for _, tg := range inventory.FromInline(list) {
			given[tg.ID] = true
		}
		for _, src := range fs.Spec.Targets.Sources {
			for _, tg := range inventory.FromInline(src.Inline) {
				given[tg.ID] = true
			}
		}
		for _, w := range p.Waves {
			for _, m := range w.Members {
				require.True(t, given[m.ID], "planned target %q was given", m.ID)
			}
		}
	})
}
