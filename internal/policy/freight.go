// Package policy decides which Freight may run on which fleet target, from
// the FreightPolicies that govern a Project. It is pure: the controller,
// the Promotion guard, `kargo-fleet plan` and `doctor` hand it the
// policies, the Freight and the targets, and all four get the same answer
// from Check.
package policy

import (
	"encoding/json"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
)

// Freight is what rules see of a Kargo Freight: its artifacts.
type Freight struct {
	Name    string   `expr:"name"`
	Alias   string   `expr:"alias"`
	Images  []Image  `expr:"images"`
	Commits []Commit `expr:"commits"`
	Charts  []Chart  `expr:"charts"`
}

// Image is a container image of a Freight.
type Image struct {
	RepoURL string `expr:"repoURL" json:"repoURL"`
	Tag     string `expr:"tag" json:"tag"`
	Digest  string `expr:"digest" json:"digest"`
}

// Commit is a git commit of a Freight.
type Commit struct {
	RepoURL string `expr:"repoURL" json:"repoURL"`
	ID      string `expr:"id" json:"id"`
	Branch  string `expr:"branch" json:"branch"`
	Tag     string `expr:"tag" json:"tag"`
}

// Chart is a Helm chart of a Freight.
type Chart struct {
	RepoURL string `expr:"repoURL" json:"repoURL"`
	Name    string `expr:"name" json:"name"`
	Version string `expr:"version" json:"version"`
}

// Target is what rules see of a fleet target.
type Target struct {
	ID     string            `expr:"id"`
	Name   string            `expr:"name"`
	Source string            `expr:"source"`
	Labels map[string]string `expr:"labels"`
	Params map[string]string `expr:"params"`
}

// TargetOf is the rules' view of a planned target.
func TargetOf(t *plan.Target) Target {
	return Target{ID: t.ID, Name: t.Name, Source: t.Source, Labels: t.Labels, Params: t.Params}
}

// FreightOf reads a Kargo Freight's artifacts. Kargo keeps them as
// schemaless JSON; a field this package does not know is ignored.
func FreightOf(f *kargo.Freight) (Freight, error) {
	out := Freight{Name: f.Name, Alias: f.Alias}
	var err error
	if out.Images, err = decodeAll[Image](f.Images, "images"); err != nil {
		return Freight{}, err
	}
	if out.Commits, err = decodeAll[Commit](f.Commits, "commits"); err != nil {
		return Freight{}, err
	}
	if out.Charts, err = decodeAll[Chart](f.Charts, "charts"); err != nil {
		return Freight{}, err
	}
	return out, nil
}

func decodeAll[T any](raw []apiextensionsv1.JSON, field string) ([]T, error) {
	out := make([]T, 0, len(raw))
	for i := range raw {
		var v T
		if err := json.Unmarshal(raw[i].Raw, &v); err != nil {
			return nil, fmt.Errorf("error reading %s[%d] of the Freight: %w", field, i, err)
		}
		out = append(out, v)
	}
	return out, nil
}
