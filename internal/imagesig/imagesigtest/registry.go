// Package imagesigtest serves an OCI registry in-process and fills it
// with images, cosign signatures and provenance attestations made with
// internal/release's signer, for tests of signature requirements.
package imagesigtest

import (
	"context"
	"encoding/base64"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/stretchr/testify/require"

	"github.com/kargo-fleet/kargo-fleet/internal/imagesig"
	"github.com/kargo-fleet/kargo-fleet/internal/release"
)

// Registry is an OCI registry served over HTTP on 127.0.0.1 (which
// go-containerregistry talks to without TLS).
type Registry struct {
	// Host is host:port.
	Host   string
	server *httptest.Server
	// Down makes every request answer 503 while set.
	Down atomic.Bool
	// Requests counts the requests served.
	Requests atomic.Int64
}

// NewRegistry starts a registry, closed when t ends.
func NewRegistry(t testing.TB) *Registry {
	t.Helper()
	r := &Registry{}
	inner := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	r.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.Requests.Add(1)
		if r.Down.Load() {
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
			return
		}
		inner.ServeHTTP(w, req)
	}))
	t.Cleanup(r.server.Close)
	r.Host = strings.TrimPrefix(r.server.URL, "http://")
	return r
}

// Close stops the registry: its address no longer answers.
func (r *Registry) Close() { r.server.Close() }

// Push pushes a new random image as repo:tag (repo without the host) and
// returns its repository URL and digest.
func (r *Registry) Push(t testing.TB, repo, tag string) (string, v1.Hash) {
	t.Helper()
	img, err := random.Image(256, 1)
	require.NoError(t, err)
	repoURL := r.Host + "/" + repo
	ref, err := name.ParseReference(repoURL + ":" + tag)
	require.NoError(t, err)
	require.NoError(t, remote.Write(ref, img))
	d, err := img.Digest()
	require.NoError(t, err)
	return repoURL, d
}

// Sign pushes the cosign signature of digest by s beside it.
func Sign(t testing.TB, s *release.Signer, repoURL string, digest v1.Hash) {
	t.Helper()
	sig, err := release.SignatureImage(s, repoURL, digest)
	require.NoError(t, err)
	PutSignature(t, repoURL, digest, sig)
}

// PutSignature pushes sig as the signature manifest of digest.
func PutSignature(t testing.TB, repoURL string, digest v1.Hash, sig v1.Image) {
	t.Helper()
	ref, err := name.ParseReference(repoURL + ":" + release.SignatureTag(digest))
	require.NoError(t, err)
	require.NoError(t, remote.Write(ref, sig))
}

// Tampered returns sig with change applied to its payload and signature
// (the signature decoded from base64).
func Tampered(t testing.TB, sig v1.Image, change func(payload, signature []byte) ([]byte, []byte)) v1.Image {
	t.Helper()
	m, err := sig.Manifest()
	require.NoError(t, err)
	out := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	for _, d := range m.Layers {
		l, err := sig.LayerByDigest(d.Digest)
		require.NoError(t, err)
		rc, err := l.Compressed()
		require.NoError(t, err)
		payload, err := io.ReadAll(rc)
		require.NoError(t, err)
		require.NoError(t, rc.Close())
		raw, err := base64.StdEncoding.DecodeString(d.Annotations[release.SignatureAnnotation])
		require.NoError(t, err)
		payload, raw = change(payload, raw)
		out, err = mutate.Append(out, mutate.Addendum{Layer: static.NewLayer(payload, d.MediaType),
			Annotations: map[string]string{release.SignatureAnnotation: base64.StdEncoding.EncodeToString(raw)}})
		require.NoError(t, err)
	}
	return mutate.ConfigMediaType(out, types.OCIConfigJSON)
}

// Attest pushes an SLSA v1 provenance attestation of digest, built by the
// release target target (its builder id is BuilderID(target)) and signed by
// s, beside it. subject is the digest the statement names.
func Attest(t testing.TB, s *release.Signer, repoURL string, digest, subject v1.Hash, target string) {
	t.Helper()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	st, err := release.Provenance(release.Build{Target: target, Version: "v1.0.0", Revision: "main",
		Platforms: []string{"linux/amd64"}, Started: now, Finished: now.Add(time.Minute)},
		[]release.Digest{{Name: repoURL, SHA256: subject.Hex}}, nil)
	require.NoError(t, err)
	env, err := release.SignStatement(context.Background(), s, st)
	require.NoError(t, err)
	att, err := mutate.Append(mutate.MediaType(empty.Image, types.OCIManifestSchema1), mutate.Addendum{
		Layer:       static.NewLayer(env, imagesig.DSSEMediaType),
		Annotations: map[string]string{"predicateType": release.SLSAPredicateType},
	})
	require.NoError(t, err)
	ref, err := name.ParseReference(repoURL + ":" + digest.Algorithm + "-" + digest.Hex + ".att")
	require.NoError(t, err)
	require.NoError(t, remote.Write(ref, mutate.ConfigMediaType(att, types.OCIConfigJSON)))
}

// BuilderID is the builder id release.Provenance writes for target.
func BuilderID(target string) string {
	return "https://github.com/kargo-fleet/kargo-fleet/tree/main/hack/" + target
}

// NewSigner returns a signer with a new key and its PEM public key.
func NewSigner(t testing.TB) (*release.Signer, string) {
	t.Helper()
	s, err := release.NewSigner("")
	require.NoError(t, err)
	pub, err := s.PublicKeyPEM()
	require.NoError(t, err)
	return s, string(pub)
}
