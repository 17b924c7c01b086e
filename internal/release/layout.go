package release

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// RefNameAnnotation tags an entry of an OCI layout's index.json.
const RefNameAnnotation = "org.opencontainers.image.ref.name"

// tagged is one tagged entry of a layout's top index.
type tagged struct {
	tag  string
	desc v1.Descriptor
}

// entries returns the tagged entries of the layout at dir: the artifacts
// (image index, chart) and, apart, the cosign signatures by tag.
func entries(dir string) (layout.Path, v1.ImageIndex, []tagged, map[string]v1.Descriptor, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return "", nil, nil, nil, fmt.Errorf("error opening OCI layout %s: %w", dir, err)
	}
	root, err := p.ImageIndex()
	if err != nil {
		return "", nil, nil, nil, err
	}
	im, err := root.IndexManifest()
	if err != nil {
		return "", nil, nil, nil, err
	}
	var arts []tagged
	sigs := map[string]v1.Descriptor{}
	for _, d := range im.Manifests {
		tag := d.Annotations[RefNameAnnotation]
		switch {
		case tag == "":
		case strings.HasSuffix(tag, ".sig"):
			sigs[tag] = d
		default:
			arts = append(arts, tagged{tag: tag, desc: d})
		}
	}
	return p, root, arts, sigs, nil
}

// SignLayout signs every tagged artifact of the layout at dir (and every
// manifest of a tagged index, as `cosign sign --recursive` does) and adds
// the signatures to the layout, each tagged SignatureTag(digest) as cosign
// stores them in a registry. repository is the reference the signatures
// name.
func SignLayout(dir string, s *Signer, repository string) ([]v1.Hash, error) {
	p, root, arts, _, err := entries(dir)
	if err != nil {
		return nil, err
	}
	signed, err := manifests(root, arts)
	if err != nil {
		return nil, err
	}
	for _, d := range signed {
		sig, err := SignatureImage(s, repository, d)
		if err != nil {
			return nil, err
		}
		if err := p.AppendImage(sig, layout.WithAnnotations(map[string]string{RefNameAnnotation: SignatureTag(d)})); err != nil {
			return nil, fmt.Errorf("error adding the signature of %s to %s: %w", d, dir, err)
		}
	}
	return signed, nil
}

// VerifyLayout checks that every tagged artifact of the layout at dir, and
// every manifest of a tagged index, has a cosign signature in the layout
// that pub verifies. It returns the digests verified.
func VerifyLayout(dir string, pub *ecdsa.PublicKey) ([]v1.Hash, error) {
	_, root, arts, sigs, err := entries(dir)
	if err != nil {
		return nil, err
	}
	if len(arts) == 0 {
		return nil, fmt.Errorf("OCI layout %s has no tagged artifact", dir)
	}
	digests, err := manifests(root, arts)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, d := range digests {
		sd, ok := sigs[SignatureTag(d)]
		if !ok {
			errs = append(errs, fmt.Errorf("%s: no signature %s", d, SignatureTag(d)))
			continue
		}
		img, err := root.Image(sd.Digest)
		if err == nil {
			err = VerifySignatureImage(pub, img, d)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", d, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("OCI layout %s: %w", dir, err)
	}
	return digests, nil
}

// manifests returns the digests of the tagged artifacts arts and of the
// manifests of those that are indexes: what cosign signs with
// --recursive.
func manifests(root v1.ImageIndex, arts []tagged) ([]v1.Hash, error) {
	var out []v1.Hash
	for _, a := range arts {
		out = append(out, a.desc.Digest)
		if !a.desc.MediaType.IsIndex() {
			continue
		}
		idx, err := root.ImageIndex(a.desc.Digest)
		if err != nil {
			return nil, err
		}
		im, err := idx.IndexManifest()
		if err != nil {
			return nil, err
		}
		for _, m := range im.Manifests {
			out = append(out, m.Digest)
		}
	}
	return out, nil
}

// PushLayout pushes every tagged entry of the layout at dir, artifacts and
// signatures, to repository under its tag, and returns the references
// pushed.
func PushLayout(ctx context.Context, dir, repository string, opts ...remote.Option) ([]string, error) {
	repo, err := name.NewRepository(repository)
	if err != nil {
		return nil, err
	}
	_, root, arts, sigs, err := entries(dir)
	if err != nil {
		return nil, err
	}
	for tag, d := range sigs {
		arts = append(arts, tagged{tag: tag, desc: d})
	}
	opts = append(opts, remote.WithContext(ctx))
	var pushed []string
	for _, a := range arts {
		ref := repo.Tag(a.tag)
		if a.desc.MediaType.IsIndex() {
			idx, err := root.ImageIndex(a.desc.Digest)
			if err == nil {
				err = remote.WriteIndex(ref, idx, opts...)
			}
			if err != nil {
				return pushed, fmt.Errorf("error pushing %s: %w", ref, err)
			}
		} else {
			img, err := root.Image(a.desc.Digest)
			if err == nil {
				err = remote.Write(ref, img, opts...)
			}
			if err != nil {
				return pushed, fmt.Errorf("error pushing %s: %w", ref, err)
			}
		}
		pushed = append(pushed, ref.String()+"@"+a.desc.Digest.String())
	}
	return pushed, nil
}
