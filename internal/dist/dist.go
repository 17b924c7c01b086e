// Package dist describes kargo-fleet's release artifacts: the CLI archives
// for each platform, their SHA-256 checksums file, and the krew plugin
// manifest that installs the CLI as `kubectl fleet`, generated from the same
// list so the manifest cannot disagree with the checksums.
package dist

import (
	"bufio"
	"bytes"
	"fmt"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// Platforms are the OS/architecture pairs `make dist` builds.
var Platforms = []Platform{{"linux", "amd64"}, {"linux", "arm64"}, {"darwin", "amd64"}, {"darwin", "arm64"}}

// Platform is a GOOS/GOARCH pair.
type Platform struct {
	OS   string
	Arch string
}

// String returns "os/arch".
func (p Platform) String() string { return p.OS + "/" + p.Arch }

// BinaryName is the executable in every archive. Krew links it as
// kubectl-fleet, and the binary then presents itself as `kubectl fleet`.
const BinaryName = "kargo-fleet"

// PluginName is the krew plugin's name: `kubectl fleet`.
const PluginName = "fleet"

// Artifact is one archive of the CLI.
type Artifact struct {
	Platform Platform
	// File is the archive's file name.
	File string
	// SHA256 is the archive's hex SHA-256.
	SHA256 string
}

// ArchiveName returns the archive file name for version and p.
func ArchiveName(version string, p Platform) string {
	return fmt.Sprintf("kargo-fleet_%s_%s_%s.tar.gz", strings.TrimPrefix(version, "v"), p.OS, p.Arch)
}

// Checksums returns a checksums file in sha256sum's format, sorted by file.
func Checksums(arts []Artifact) []byte {
	arts = slices.Clone(arts)
	slices.SortFunc(arts, func(a, b Artifact) int { return strings.Compare(a.File, b.File) })
	var b bytes.Buffer
	for _, a := range arts {
		fmt.Fprintf(&b, "%s  %s\n", a.SHA256, a.File)
	}
	return b.Bytes()
}

// ParseChecksums reads a checksums file in sha256sum's format into
// file -> hex SHA-256.
func ParseChecksums(raw []byte) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		sum, file, ok := strings.Cut(sc.Text(), "  ")
		if !ok || len(sum) != 64 {
			return nil, fmt.Errorf("malformed checksum line %q", sc.Text())
		}
		out[file] = sum
	}
	return out, sc.Err()
}

// krewPlugin is the part of krew's Plugin (krew.googlecontainertools.github.com/v1alpha2)
// this manifest fills.
type krewPlugin struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Metadata   map[string]any `json:"metadata"`
	Spec       krewSpec       `json:"spec"`
}

type krewSpec struct {
	Version          string         `json:"version"`
	Homepage         string         `json:"homepage"`
	ShortDescription string         `json:"shortDescription"`
	Description      string         `json:"description"`
	Platforms        []krewPlatform `json:"platforms"`
}

type krewPlatform struct {
	Selector map[string]any      `json:"selector"`
	URI      string              `json:"uri"`
	SHA256   string              `json:"sha256"`
	Files    []krewFileOperation `json:"files"`
	Bin      string              `json:"bin"`
}

type krewFileOperation struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// KrewManifest returns the krew plugin manifest for version, whose archives
// are downloaded from baseURL + "/" + File.
func KrewManifest(version, baseURL string, arts []Artifact) ([]byte, error) {
	if !strings.HasPrefix(version, "v") {
		return nil, fmt.Errorf("krew needs a semantic version starting with v, got %q", version)
	}
	p := krewPlugin{
		APIVersion: "krew.googlecontainertools.github.com/v1alpha2",
		Kind:       "Plugin",
		Metadata:   map[string]any{"name": PluginName},
		Spec: krewSpec{
			Version:          version,
			Homepage:         "https://github.com/kargo-fleet/kargo-fleet",
			ShortDescription: "Watch and steer Kargo fleet rollouts",
			Description: "Shows kargo-fleet FleetStages and FleetRollouts with progress per wave, previews wave plans, " +
				"and pauses, resumes, aborts or rolls back fleet rollouts promoted by Kargo.",
		},
	}
	// Krew copies the licence next to the binary, as its index requires.
	files := make([]krewFileOperation, 0, len(ArchiveFiles))
	for _, f := range ArchiveFiles {
		files = append(files, krewFileOperation{From: f, To: "."})
	}
	for _, a := range arts {
		p.Spec.Platforms = append(p.Spec.Platforms, krewPlatform{
			Selector: map[string]any{"matchLabels": map[string]string{"os": a.Platform.OS, "arch": a.Platform.Arch}},
			URI:      strings.TrimSuffix(baseURL, "/") + "/" + a.File,
			SHA256:   a.SHA256,
			Files:    files,
			Bin:      BinaryName,
		})
	}
	return yaml.Marshal(p)
}
