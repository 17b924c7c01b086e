package kargo

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"
)

// AuthorizedStageAnnotation names, on an Argo CD Application, the Kargo
// Stages allowed to change it: a comma-separated list of
// "<project>:<stage>" entries. Kargo's argocd-update step refuses an
// Application that does not name its Stage.
const AuthorizedStageAnnotation = "kargo.akuity.io/authorized-stage"

// ArgoCDDefaultNamespace is where Kargo looks for an Application when the
// argocd-update step names none (Kargo's ARGOCD_NAMESPACE, default argocd).
const ArgoCDDefaultNamespace = "argocd"

// AuthorizedStages parses the value of an AuthorizedStageAnnotation the way
// Kargo v1.11.2 does: entries are separated by commas, blanks around entries
// and around their parts are ignored, empty entries are skipped; an entry
// without both a project and a Stage, or holding a "*" anywhere (the glob
// form Kargo no longer accepts), is an error, and so is a value with no
// entry. Project and Stage come back as Namespace and Name.
func AuthorizedStages(value string) ([]types.NamespacedName, error) {
	var out []types.NamespacedName
	for entry := range strings.SplitSeq(value, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		project, stage, found := strings.Cut(entry, ":")
		project, stage = strings.TrimSpace(project), strings.TrimSpace(stage)
		if !found || project == "" || stage == "" {
			return nil, fmt.Errorf("invalid authorized Stage %q: expected format %q", entry, "<project>:<stage>")
		}
		if strings.Contains(project, "*") || strings.Contains(stage, "*") {
			return nil, fmt.Errorf("invalid authorized Stage %q: deprecated glob expressions are no longer supported", entry)
		}
		out = append(out, types.NamespacedName{Namespace: project, Name: stage})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no authorized Stages found in %q", value)
	}
	return out, nil
}

// AuthorizeStage says whether an object with the given annotations lets the
// Stage project/stage change it. A nil error means it does; otherwise the
// error says why not, in the words Kargo v1.11.2 logs for an Argo CD
// Application it skips.
func AuthorizeStage(annotations map[string]string, app types.NamespacedName, project, stage string) error {
	value, ok := annotations[AuthorizedStageAnnotation]
	if !ok {
		return fmt.Errorf("Argo CD Application %q in namespace %q does not permit mutation by Kargo Stage %s in namespace %s", //nolint:staticcheck // Kargo's wording
			app.Name, app.Namespace, stage, project)
	}
	stages, err := AuthorizedStages(value)
	if err != nil {
		return fmt.Errorf("unable to parse value of annotation %q (%q) on Argo CD Application %q in namespace %q: %w",
			AuthorizedStageAnnotation, value, app.Name, app.Namespace, err)
	}
	if slices.Contains(stages, types.NamespacedName{Namespace: project, Name: stage}) {
		return nil
	}
	return fmt.Errorf("Argo CD Application %q in namespace %q does not permit mutation by Kargo Stage %s in namespace %s", //nolint:staticcheck // Kargo's wording
		app.Name, app.Namespace, stage, project)
}
