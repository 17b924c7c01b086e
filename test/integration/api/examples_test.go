//go:build integration

package api_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	fswebhook "github.com/kargo-fleet/kargo-fleet/fleetstage/webhook"
	"github.com/kargo-fleet/kargo-fleet/internal/envtest"
)

// akuityPlatformGroup is the API group of the Akuity Platform's own kinds
// (CustomPromotionStep): Kargo OSS has no CRD for them, so they cannot be
// admitted here. They are decoded, not admitted.
const akuityPlatformGroup = "ee.kargo.akuity.io"

// document is one Kubernetes object a user would copy.
type document struct {
	source string // file, with the document's or block's position
	raw    []byte
}

// argoCDGroup is Argo CD's API group (Applications, ApplicationSets).
const argoCDGroup = "argoproj.io"

// TestExamplesAreAccepted admits every object of examples/, of the chart's
// ClusterPromotionTasks, and every ```yaml block of the docs that is a
// complete object (apiVersion and kind) or a list of promotion steps (in a
// Stage's template) through the real apiserver (CRD schema and CEL) and the
// admission webhooks: the FleetStage webhook, and the Kargo
// simulator's Stage and Promotion webhooks, which refuse what Kargo v1.11.2
// refuses. Objects are created with a server-side dry run, so examples that
// share a name do not collide; their namespaces are created as Kargo
// Projects.
func TestExamplesAreAccepted(t *testing.T) {
	root := envtest.RepoRoot()
	var docs []document
	for _, pattern := range []string{"examples/*/*.yaml", "examples/*/*/*.yaml", "charts/kargo-fleet/tasks/*.yaml"} {
		files, err := filepath.Glob(filepath.Join(root, pattern))
		require.NoError(t, err)
		for _, f := range files {
			docs = append(docs, yamlDocuments(t, f)...)
		}
	}
	mds, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	require.NoError(t, err)
	for _, f := range append(mds, filepath.Join(root, "README.md")) {
		docs = append(docs, markdownObjects(t, f)...)
	}
	require.GreaterOrEqual(t, len(docs), 10, "the examples were found")

	admitted := map[string]int{}
	for _, d := range docs {
		t.Run(d.source, func(t *testing.T) {
			obj := &unstructured.Unstructured{}
			require.NoError(t, yaml.Unmarshal(d.raw, &obj.Object))
			gvk := obj.GroupVersionKind()
			require.NotEmpty(t, gvk.Kind, "every document is a Kubernetes object")
			if gvk.Group == akuityPlatformGroup || gvk.Group == argoCDGroup {
				// Kinds of the Akuity Platform and of Argo CD: their own
				// servers admit them, and no CRD of theirs is installed here.
				require.NotEmpty(t, obj.GetName())
				return
			}
			if gvk.Kind == "FleetStage" {
				// The typed decode is strict: a misspelt field fails here.
				fs := &fleetv1alpha1.FleetStage{}
				require.NoError(t, yaml.UnmarshalStrict(d.raw, fs))
				require.NoError(t, fswebhook.Validate(fs))
			}
			ctx := context.Background()
			if ns := obj.GetNamespace(); ns != "" {
				if err := env.Client.Create(ctx, envtest.ProjectNamespace(ns)); !apierrors.IsAlreadyExists(err) {
					require.NoError(t, err)
				}
			}
			err := env.Client.Create(ctx, obj, client.DryRunAll)
			require.False(t, meta.IsNoMatchError(err), "no CRD for %s: %v", gvk, err)
			require.NoError(t, err, "%s %s is refused", gvk.Kind, obj.GetName())
			admitted[gvk.Kind]++
		})
	}
	// The kinds whose admission the fault reports were about.
	require.Positive(t, admitted["Stage"], "a Stage example went through the Stage webhook")
	require.Positive(t, admitted["FleetStage"], "a FleetStage example went through the FleetStage webhook")
}

// TestExamplesAdmissionRefusesTaskStepIf shows the examples test can fail:
// the wave-stage example as it was, with fleet-rollback behind
// `if: ${{ failure() }}`, is refused as Kargo refuses it.
func TestExamplesAdmissionRefusesTaskStepIf(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(envtest.RepoRoot(), "examples", "steps", "wave-stage.yaml"))
	require.NoError(t, err)
	obj := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal(raw, &obj.Object))
	steps, _, err := unstructured.NestedSlice(obj.Object, "spec", "promotionTemplate", "spec", "steps")
	require.NoError(t, err)
	steps = append(steps, map[string]any{
		"task": map[string]any{"name": "fleet-rollback", "kind": "ClusterPromotionTask"},
		"as":   "rollback",
		"if":   "${{ failure() }}",
	})
	require.NoError(t, unstructured.SetNestedSlice(obj.Object, steps, "spec", "promotionTemplate", "spec", "steps"))
	ctx := context.Background()
	if err := env.Client.Create(ctx, envtest.ProjectNamespace(obj.GetNamespace())); !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	err = env.Client.Create(ctx, obj, client.DryRunAll)
	require.ErrorContains(t, err, "PromotionTemplate step referencing a task cannot have an 'if' condition")
}

// yamlDocuments splits a YAML file into its documents, skipping empty ones.
func yamlDocuments(t *testing.T, path string) []document {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	rel, err := filepath.Rel(envtest.RepoRoot(), path)
	require.NoError(t, err)
	r := utilyaml.NewYAMLReader(bufioReader(raw))
	var out []document
	for i := 0; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		body := bytes.TrimSpace(stripComments(doc))
		if len(body) == 0 || bytes.HasPrefix(body, []byte("- ")) {
			// Empty, or a list of targets for an offline plan
			// (examples/plan): not an object to admit.
			continue
		}
		out = append(out, document{source: rel + "#" + itoa(i), raw: doc})
	}
	return out
}

var yamlBlock = regexp.MustCompile("(?ms)^```yaml\n(.*?)^```")

// markdownObjects returns the ```yaml blocks of a Markdown file that a
// user copies into a cluster: complete Kubernetes objects (top-level
// apiVersion and kind), and lists of promotion steps (every item has `uses`
// or `task`, alone or under `steps:`), which go into a Stage's promotion
// template and are admitted as one.
func markdownObjects(t *testing.T, path string) []document {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	rel, err := filepath.Rel(envtest.RepoRoot(), path)
	require.NoError(t, err)
	var out []document
	for _, m := range yamlBlock.FindAllSubmatchIndex(raw, -1) {
		block := raw[m[2]:m[3]]
		source := rel + ":" + itoa(1+bytes.Count(raw[:m[0]], []byte("\n")))
		if steps := promotionSteps(block); steps != nil {
			out = append(out, document{source: source, raw: stageWithSteps(t, steps)})
			continue
		}
		if !regexp.MustCompile(`(?m)^apiVersion:`).Match(block) || !regexp.MustCompile(`(?m)^kind:`).Match(block) {
			continue
		}
		for i, doc := range strings.Split(string(block), "\n---\n") {
			out = append(out, document{source: source + "#" + itoa(i), raw: []byte(doc)})
		}
	}
	return out
}

// promotionSteps returns the steps of a block that is a list of promotion
// steps, or nil.
func promotionSteps(block []byte) []any {
	var list []any
	if err := yaml.Unmarshal(block, &list); err != nil {
		var obj map[string]any
		if yaml.Unmarshal(block, &obj) != nil || len(obj) != 1 {
			return nil
		}
		if list, _ = obj["steps"].([]any); list == nil {
			return nil
		}
	}
	for _, item := range list {
		step, ok := item.(map[string]any)
		if !ok || (step["uses"] == nil && step["task"] == nil) {
			return nil
		}
	}
	return list
}

// stageWithSteps is a Stage whose promotion template runs steps.
func stageWithSteps(t *testing.T, steps []any) []byte {
	t.Helper()
	raw, err := yaml.Marshal(map[string]any{
		"apiVersion": "kargo.akuity.io/v1alpha1", "kind": "Stage",
		"metadata": map[string]any{"namespace": "docs", "name": "snippet"},
		"spec": map[string]any{
			"requestedFreight": []any{map[string]any{
				"origin": map[string]any{"kind": "Warehouse", "name": "apps"}, "sources": map[string]any{"direct": true},
			}},
			"promotionTemplate": map[string]any{"spec": map[string]any{"steps": steps}},
		},
	})
	require.NoError(t, err)
	return raw
}

func stripComments(b []byte) []byte {
	var out []byte
	for _, l := range bytes.Split(b, []byte("\n")) {
		if t := bytes.TrimSpace(l); len(t) > 0 && t[0] != '#' && !bytes.Equal(t, []byte("---")) {
			out = append(out, l...)
			out = append(out, '\n')
		}
	}
	return out
}
