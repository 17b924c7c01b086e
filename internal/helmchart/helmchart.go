// Package helmchart renders and lints the kargo-fleet Helm chart with the
// Helm SDK, the way `helm template` and `helm lint --strict` do, for the
// chart's tests.
package helmchart

import (
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint/support"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// Dir returns the chart's folder.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "charts", "kargo-fleet")
}

// Release says what to render.
type Release struct {
	// Name and Namespace of the release.
	Name      string
	Namespace string
	// Values are the user's values, merged over values.yaml.
	Values map[string]any
	// APIVersions the cluster serves in addition to Helm's defaults, e.g.
	// "cert-manager.io/v1".
	APIVersions []string
}

// Render renders the chart for r and returns its objects in file order,
// NOTES.txt excluded. It fails when the values break values.schema.json.
func Render(r Release) ([]*unstructured.Unstructured, error) {
	ch, err := loader.Load(Dir())
	if err != nil {
		return nil, fmt.Errorf("error loading chart: %w", err)
	}
	caps := chartutil.DefaultCapabilities.Copy()
	caps.APIVersions = append(slices.Clone(caps.APIVersions), r.APIVersions...)
	vals, err := chartutil.ToRenderValues(ch, r.Values,
		chartutil.ReleaseOptions{Name: r.Name, Namespace: r.Namespace, Revision: 1, IsInstall: true}, caps)
	if err != nil {
		return nil, fmt.Errorf("error computing values: %w", err)
	}
	files, err := new(engine.Engine).Render(ch, vals)
	if err != nil {
		return nil, fmt.Errorf("error rendering chart: %w", err)
	}
	names := make([]string, 0, len(files))
	for name := range files {
		if strings.HasSuffix(name, ".yaml") {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	var objs []*unstructured.Unstructured
	for _, name := range names {
		for doc := range strings.SplitSeq(files[name], "\n---") {
			j, err := yaml.YAMLToJSON([]byte(doc))
			if err != nil {
				return nil, fmt.Errorf("error decoding %s: %w", name, err)
			}
			if string(j) == "null" {
				continue
			}
			// Unstructured's own decoder keeps integers int64, as the API
			// machinery expects.
			obj := &unstructured.Unstructured{}
			if err := obj.UnmarshalJSON(j); err != nil {
				return nil, fmt.Errorf("error decoding %s: %w", name, err)
			}
			objs = append(objs, obj)
		}
	}
	return objs, nil
}

// Lint runs Helm's strict lint on the chart with values and returns every
// message of severity warning or worse.
func Lint(namespace string, values map[string]any) error {
	l := action.NewLint()
	l.Strict = true
	l.Namespace = namespace
	res := l.Run([]string{Dir()}, values)
	var errs []error
	for _, m := range res.Messages {
		if m.Severity >= support.WarningSev {
			errs = append(errs, m)
		}
	}
	return errors.Join(append(errs, res.Errors...)...)
}

// Find returns the rendered object of kind whose name ends with suffix,
// or nil.
func Find(objs []*unstructured.Unstructured, kind, suffix string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && strings.HasSuffix(o.GetName(), suffix) {
			return o
		}
	}
	return nil
}
