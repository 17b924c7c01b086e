package kargosim

import "time"

// simulatedKinds are Kargo v1.11.2's built-in step kinds other than http and
// compose-output, with the default timeouts Kargo gives them. The simulator
// does not execute them; their outcome comes from fault injection. An
// unknown kind errors at run time, as on Kargo.
var simulatedKinds = []struct {
	name    string
	timeout time.Duration
}{
	{"argocd-update", 5 * time.Minute},
	{"argocd-wait", 5 * time.Minute},
	{"copy", 0}, {"delete", 0}, {"fail", 0}, {"file-write", 0},
	{"git-clear", 0}, {"git-clone", 0}, {"git-commit", 0}, {"git-merge-pr", 0},
	{"git-open-pr", 0}, {"git-push", 0}, {"git-tag", 0}, {"git-wait-for-pr", 0},
	{"github-push", 0}, {"helm-template", 0}, {"helm-update-chart", 0},
	{"http-download", 0}, {"json-parse", 0}, {"json-update", 0},
	{"kustomize-build", 0}, {"kustomize-set-image", 0}, {"oci-download", 0},
	{"oci-push", 0}, {"set-freight-alias", 0}, {"set-metadata", 0},
	{"toml-parse", 0}, {"toml-update", 0}, {"yaml-parse", 0}, {"yaml-update", 0},
}
