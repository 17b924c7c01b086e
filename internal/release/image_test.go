package release

import (
	"bytes"
	"context"
	"io"
	"log"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/chart/loader"
	helmregistry "helm.sh/helm/v3/pkg/registry"

	"github.com/kargo-fleet/kargo-fleet/internal/dist"
	"github.com/kargo-fleet/kargo-fleet/internal/ociimage"
)

// TestImage runs `make image` for one platform with the small command and
// checks what a user verifies: the image's SBOM lists exactly the modules
// of the binary in the image, the image carries the notices and the CA
// certificates, the cosign signature manifests are in the layout and
// verify, the chart is packaged at the image's version, and the provenance
// names every output. It then pushes the image and the chart to an
// in-process registry and pulls the chart back with Helm's registry client.
func TestImage(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	tmp := t.TempDir()
	lay, out := filepath.Join(tmp, "image"), filepath.Join(tmp, "image-release")
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	created := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	const repo, chartRepo = "registry.example/kargo-fleet", "registry.example/charts/kargo-fleet"
	require.NoError(t, Image(ctx, ImageOptions{
		Options: Options{Source: linkedSource(t), Out: out, Revision: strings.Repeat("ab", 20), Platforms: []dist.Platform{thisPlatform}},
		Layout:  lay, Repository: repo, ChartRepository: chartRepo, ChartDir: filepath.Join(root, "charts", "kargo-fleet"),
		CACertsFile: ociimage.CACertsPath, Created: created}))
	pub := publicKey(t, out)

	// The layout: the index tagged with the chart version, and a cosign
	// signature manifest for the index and for the platform's manifest.
	p, err := layout.FromPath(lay)
	require.NoError(t, err)
	top, err := p.ImageIndex()
	require.NoError(t, err)
	tm, err := top.IndexManifest()
	require.NoError(t, err)
	tags := map[string]v1.Descriptor{}
	for _, d := range tm.Manifests {
		tags[d.Annotations[RefNameAnnotation]] = d
	}
	idx, err := top.ImageIndex(tags["9.8.7"].Digest)
	require.NoError(t, err)
	im, err := idx.IndexManifest()
	require.NoError(t, err)
	require.Len(t, im.Manifests, 1)
	platformDigest := im.Manifests[0].Digest
	require.Len(t, tags, 3, "the image index and two signatures")
	for _, d := range []v1.Hash{tags["9.8.7"].Digest, platformDigest} {
		sd, ok := tags[SignatureTag(d)]
		require.True(t, ok, "signature of %s tagged %s", d, SignatureTag(d))
		sig, err := top.Image(sd.Digest)
		require.NoError(t, err)
		m, err := sig.Manifest()
		require.NoError(t, err)
		require.Len(t, m.Layers, 1)
		require.Equal(t, SimpleSigningMediaType, m.Layers[0].MediaType)
		require.NotEmpty(t, m.Layers[0].Annotations[SignatureAnnotation])
		require.NoError(t, VerifySignatureImage(pub, sig, d))
		require.ErrorContains(t, VerifySignatureImage(pub, sig, v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("0", 64)}), "not sha256:",
			"a signature names the one manifest it signs")
		other, err := NewSigner("")
		require.NoError(t, err)
		require.Error(t, VerifySignatureImage(other.Public(), sig, d))
	}

	img, err := idx.Image(platformDigest)
	require.NoError(t, err)
	bin := filepath.Join(tmp, "kargo-fleet")
	raw, err := ociimage.ReadFile(img, "kargo-fleet")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(bin, raw, 0o755))
	info, err := ReadBinary(bin)
	require.NoError(t, err)
	notices, err := ociimage.ReadFile(img, "licenses/THIRD_PARTY_NOTICES")
	require.NoError(t, err)
	requireNoticesCover(t, notices, info)
	certs, err := ociimage.ReadFile(img, "etc/ssl/certs/ca-certificates.crt")
	require.NoError(t, err)
	require.Contains(t, string(certs), "BEGIN CERTIFICATE")

	subject := repo + ":9.8.7 " + thisPlatform.String()
	sbom, err := os.ReadFile(filepath.Join(out, "kargo-fleet_9.8.7_image_"+thisPlatform.OS+"_"+thisPlatform.Arch+SBOMSuffix))
	require.NoError(t, err)
	requireSBOMLists(t, sbom, info, subject, true)
	bom, err := ReadSBOM(sbom)
	require.NoError(t, err)
	require.Equal(t, platformDigest.Hex, (*bom.Metadata.Component.Hashes)[0].Value, "the SBOM names the image manifest")

	// The chart, at the image's version.
	tgz, err := os.ReadFile(filepath.Join(out, "kargo-fleet-9.8.7.tgz"))
	require.NoError(t, err)
	ch, err := loader.LoadArchive(bytes.NewReader(tgz))
	require.NoError(t, err)
	require.Equal(t, "9.8.7", ch.Metadata.Version)
	require.Equal(t, "9.8.7", ch.Metadata.AppVersion, "the chart's default image tag is the image's tag")
	chartDigests, err := VerifyLayout(filepath.Join(out, ChartLayoutDir), pub)
	require.NoError(t, err)
	require.Len(t, chartDigests, 1)

	r, err := Verify(ctx, pub, lay, out)
	require.NoError(t, err)
	require.Len(t, r.Manifests, 3, "index, platform manifest, chart")
	require.Len(t, r.Provenance, 1)
	requireProvenance(t, ctx, pub, filepath.Join(out, "kargo-fleet_9.8.7_image"+ProvenanceSuffix), out, map[string]string{
		repo + ":9.8.7": tags["9.8.7"].Digest.Hex, subject: platformDigest.Hex, chartRepo + ":9.8.7": chartDigests[0].Hex,
	})
	_, err = Verify(ctx, pub, out)
	require.ErrorContains(t, err, "give its OCI layout too", "the image's subjects need the image")

	requirePushAndPull(t, ctx, lay, filepath.Join(out, ChartLayoutDir), tags["9.8.7"].Digest, tgz)
}

// requirePushAndPull pushes both layouts to an in-process registry, then
// reads the image's signature back by its cosign tag and pulls the chart
// with Helm's own registry client, as `helm install oci://...` does.
func requirePushAndPull(t *testing.T, ctx context.Context, imageLayout, chartLayout string, index v1.Hash, tgz []byte) {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	u, err := url.Parse(srv.URL)
	require.NoError(t, err)
	pushed, err := PushLayout(ctx, imageLayout, u.Host+"/kargo-fleet")
	require.NoError(t, err)
	require.Len(t, pushed, 3)
	sigRef, err := name.ParseReference(u.Host + "/kargo-fleet:" + SignatureTag(index))
	require.NoError(t, err)
	_, err = remote.Image(sigRef, remote.WithContext(ctx))
	require.NoError(t, err, "cosign finds the signature by its tag")
	idxRef, err := name.ParseReference(u.Host + "/kargo-fleet:9.8.7")
	require.NoError(t, err)
	got, err := remote.Index(idxRef, remote.WithContext(ctx))
	require.NoError(t, err)
	d, err := got.Digest()
	require.NoError(t, err)
	require.Equal(t, index, d, "the pushed index is the signed one")

	_, err = PushLayout(ctx, chartLayout, u.Host+"/charts/kargo-fleet")
	require.NoError(t, err)
	client, err := helmregistry.NewClient(helmregistry.ClientOptPlainHTTP(), helmregistry.ClientOptWriter(&bytes.Buffer{}))
	require.NoError(t, err)
	res, err := client.Pull(u.Host + "/charts/kargo-fleet:9.8.7")
	require.NoError(t, err)
	require.Equal(t, tgz, res.Chart.Data, "helm pulls the packaged chart")
	require.Equal(t, "9.8.7", res.Chart.Meta.Version)
}
