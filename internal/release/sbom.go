package release

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"
)

// SBOMSuffix is appended to an artifact's name to name its SBOM.
const SBOMSuffix = ".sbom.cdx.json"

// Subject is the artifact an SBOM describes.
type Subject struct {
	// Name is the archive's file name or the image's reference.
	Name string
	// Version of kargo-fleet.
	Version string
	// Container is true for an image, false for an archive.
	Container bool
	// SHA256 is the hex digest of the archive, or of the image's manifest.
	SHA256 string
}

// SBOM returns a CycloneDX 1.6 SBOM (JSON) of subject: the binary it
// carries, the Go modules that binary links (exactly those of its build
// information, as `go version -m` lists them) with their licences, and
// kargo-fleet's own module. created stamps it; the serial number is
// derived from the content so the same inputs give the same bytes.
func SBOM(subject Subject, b Binary, licenses []ModuleLicense, created time.Time) ([]byte, error) {
	byPath := map[string]ModuleLicense{}
	for _, l := range licenses {
		byPath[l.Module.Path] = l
	}
	typ := cdx.ComponentTypeFile
	if subject.Container {
		typ = cdx.ComponentTypeContainer
	}
	// The main module's build information says "(devel)": the release
	// version names it instead.
	mainPURL := Module{Path: b.Main.Path, Version: subject.Version}.PURL()
	main := cdx.Component{
		BOMRef: mainPURL, Type: cdx.ComponentTypeApplication, Name: b.Main.Path, Version: subject.Version,
		PackageURL: mainPURL,
		Licenses:   &cdx.Licenses{{License: &cdx.License{ID: "Apache-2.0"}}},
		Properties: &[]cdx.Property{{Name: "go:version", Value: b.GoVersion}},
	}
	for _, k := range []string{"GOOS", "GOARCH", "CGO_ENABLED"} {
		*main.Properties = append(*main.Properties, cdx.Property{Name: "go:build:" + k, Value: b.Settings[k]})
	}
	components := []cdx.Component{main}
	var deps []string
	for _, m := range b.Deps {
		c := cdx.Component{BOMRef: m.PURL(), Type: cdx.ComponentTypeLibrary, Name: m.Path, Version: m.Version,
			PackageURL: m.PURL(), Scope: cdx.ScopeRequired}
		if l, ok := byPath[m.Path]; ok {
			c.Licenses = &cdx.Licenses{{Expression: l.Expression()}}
		}
		if m.Source().Sum != "" {
			c.Properties = &[]cdx.Property{{Name: "go:sum", Value: m.Source().Sum}}
		}
		if m.Replace != nil {
			r := m.Replace.Path + " " + m.Replace.Version
			props := append(deref(c.Properties), cdx.Property{Name: "go:replace", Value: r})
			c.Properties = &props
		}
		components = append(components, c)
		deps = append(deps, c.BOMRef)
	}
	bom := cdx.NewBOM()
	bom.Metadata = &cdx.Metadata{
		Timestamp: created.UTC().Format(time.RFC3339),
		Component: &cdx.Component{
			BOMRef: subject.Name, Type: typ, Name: subject.Name, Version: subject.Version,
			Hashes: &[]cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: subject.SHA256}},
		},
		Tools: &cdx.ToolsChoice{Components: &[]cdx.Component{{Type: cdx.ComponentTypeApplication,
			Name: "kargo-fleet release tooling", Version: subject.Version}}},
	}
	bom.Components = &components
	bom.Dependencies = &[]cdx.Dependency{
		{Ref: subject.Name, Dependencies: &[]string{main.BOMRef}},
		{Ref: main.BOMRef, Dependencies: &deps},
	}
	// A content-derived serial number: a new one per build would make the
	// same inputs give different files.
	probe, err := encodeSBOM(bom)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(probe)
	sum[6], sum[8] = sum[6]&0x0f|0x50, sum[8]&0x3f|0x80 // UUID version 5 layout, RFC 9562
	bom.SerialNumber = fmt.Sprintf("urn:uuid:%x-%x-%x-%x-%x", sum[0:4], sum[4:6], sum[6:8], sum[8:10], sum[10:16])
	return encodeSBOM(bom)
}

func encodeSBOM(bom *cdx.BOM) ([]byte, error) {
	var buf bytes.Buffer
	if err := cdx.NewBOMEncoder(&buf, cdx.BOMFileFormatJSON).SetPretty(true).EncodeVersion(bom, cdx.SpecVersion1_6); err != nil {
		return nil, fmt.Errorf("error encoding the SBOM: %w", err)
	}
	return buf.Bytes(), nil
}

// ReadSBOM decodes a CycloneDX JSON SBOM.
func ReadSBOM(raw []byte) (*cdx.BOM, error) {
	bom := new(cdx.BOM)
	if err := cdx.NewBOMDecoder(bytes.NewReader(raw), cdx.BOMFileFormatJSON).Decode(bom); err != nil {
		return nil, fmt.Errorf("error decoding the SBOM: %w", err)
	}
	return bom, nil
}

func deref[T any](p *[]T) []T {
	if p == nil {
		return nil
	}
	return *p
}
