package release

import (
	"context"
	"crypto/ecdsa"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func publicKey(t *testing.T, dir string) *ecdsa.PublicKey {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, PublicKeyFile))
	require.NoError(t, err)
	pub, err := ParsePublicKey(raw)
	require.NoError(t, err)
	return pub
}

// requireSBOMLists checks, with the CycloneDX library, that the SBOM raw
// describes subject and lists exactly the modules the binary info links.
func requireSBOMLists(t *testing.T, raw []byte, info Binary, subject string, container bool) {
	t.Helper()
	bom, err := ReadSBOM(raw)
	require.NoError(t, err)
	require.Equal(t, "CycloneDX", bom.BOMFormat)
	require.Equal(t, subject, bom.Metadata.Component.Name)
	require.Equal(t, container, bom.Metadata.Component.Type == "container")
	var want, got []string
	for _, m := range info.Deps {
		want = append(want, m.Path+"@"+m.Version)
	}
	for _, c := range *bom.Components {
		if c.Type == "library" {
			got = append(got, c.Name+"@"+c.Version)
			require.Equal(t, "pkg:golang/"+c.Name+"@"+c.Version, c.PackageURL)
			require.NotNil(t, c.Licenses, c.Name)
			require.NotEmpty(t, (*c.Licenses)[0].Expression, c.Name)
		}
	}
	require.Equal(t, want, got, "the SBOM lists exactly the linked modules, as go version -m does")
}

// requireNoticesCover checks that the notices name every linked module
// and carry the licence text of every module not under Apache-2.0.
func requireNoticesCover(t *testing.T, notices []byte, info Binary) {
	t.Helper()
	text := string(notices)
	modCache, err := ModuleCache()
	require.NoError(t, err)
	licenses, err := FindLicenses(modCache, info.Deps)
	require.NoError(t, err)
	kinds := map[string]bool{}
	for _, l := range licenses {
		require.Contains(t, text, "\n"+l.Module.Path+" "+l.Module.Version+"\n", "every module is named")
		kinds[l.Expression()] = true
		if l.Expression() == "Apache-2.0" {
			continue
		}
		require.Contains(t, text, l.Module.Path+" "+l.Module.Version+"\nLicence: "+l.Expression()+"\n")
		for _, f := range l.Files {
			require.Contains(t, text, "--- "+f.Name+" ---\n"+strings.TrimRight(string(f.Text), "\n"), l.Module.Path)
		}
	}
	for _, k := range []string{"Apache-2.0", "BSD-3-Clause", "MIT", "ISC"} {
		require.True(t, kinds[k], "the small command links a module under %s", k)
	}
	require.Contains(t, text, "Go standard library "+info.GoVersion)
}

// requireProvenance checks the signed provenance at path: an in-toto
// statement with an SLSA v1 predicate whose subjects are every file of dir
// (signatures, key and provenance aside) by its SHA-256, plus the manifest
// digests in manifests by name.
func requireProvenance(t *testing.T, ctx context.Context, pub *ecdsa.PublicKey, path, dir string, manifests map[string]string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	st, err := VerifyStatement(ctx, pub, raw)
	require.NoError(t, err)
	require.Equal(t, "https://in-toto.io/Statement/v1", st.GetType())
	require.Equal(t, SLSAPredicateType, st.GetPredicateType())
	got := map[string]string{}
	for _, s := range st.GetSubject() {
		got[s.GetName()] = s.GetDigest()["sha256"]
	}
	want := map[string]string{}
	for k, v := range manifests {
		want[k] = v
	}
	_, files, _, err := scan(dir)
	require.NoError(t, err)
	for _, f := range files {
		sum, err := fileSHA256(f)
		require.NoError(t, err)
		want[filepath.Base(f)] = sum
	}
	require.Equal(t, want, got)

	pred := st.GetPredicate().AsMap()
	def := pred["buildDefinition"].(map[string]any)
	require.Equal(t, BuildType, def["buildType"])
	ext := def["externalParameters"].(map[string]any)
	require.Equal(t, "v9.8.7", ext["version"])
	require.Equal(t, strings.Repeat("ab", 20), ext["revision"])
	require.NotEmpty(t, ext["platforms"])
	deps := def["resolvedDependencies"].([]any)
	require.Equal(t, map[string]any{"gitCommit": strings.Repeat("ab", 20)}, deps[0].(map[string]any)["digest"])
	require.Contains(t, deps[2].(map[string]any)["uri"], "pkg:golang/")
	require.Contains(t, deps[2].(map[string]any)["digest"], "dirHash")
	require.NotEmpty(t, pred["runDetails"].(map[string]any)["builder"].(map[string]any)["id"])

	// Tampering with the envelope's payload breaks its signature.
	tampered := strings.Replace(string(raw), `"payload":"`, `"payload":"e30`, 1)
	_, err = VerifyStatement(ctx, pub, []byte(tampered))
	require.Error(t, err)
}
