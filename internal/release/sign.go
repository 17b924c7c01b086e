package release

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"
)

// PublicKeyFile is the name of the public key written beside the outputs:
// cosign's default name, so `cosign verify-blob --key cosign.pub` reads it.
const PublicKeyFile = "cosign.pub"

// SignatureSuffix is appended to a file's name to name its signature.
const SignatureSuffix = ".sig"

// Signer signs release artifacts with an ECDSA P-256 key, as
// `cosign sign-blob --key` does: the signature is ASN.1 DER over the
// SHA-256 of the content, base64-encoded.
type Signer struct {
	key *ecdsa.PrivateKey
	// Ephemeral is true for a key generated for this build only: its
	// signatures prove the outputs belong together, not who made them.
	Ephemeral bool
}

// NewSigner returns a signer with the PEM EC private key in keyFile (SEC 1
// "EC PRIVATE KEY" or PKCS #8 "PRIVATE KEY", as `openssl ecparam -genkey`
// and `openssl genpkey` write them), or with a new ephemeral key when
// keyFile is empty.
func NewSigner(keyFile string) (*Signer, error) {
	if keyFile == "" {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, err
		}
		return &Signer{key: key, Ephemeral: true}, nil
	}
	raw, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("error reading the signing key: %w", err)
	}
	key, err := ParsePrivateKey(raw)
	if err != nil {
		return nil, fmt.Errorf("error reading the signing key %s: %w", keyFile, err)
	}
	return &Signer{key: key}, nil
}

// ParsePrivateKey parses a PEM ECDSA P-256 private key.
func ParsePrivateKey(raw []byte) (*ecdsa.PrivateKey, error) {
	for rest := raw; ; {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			return nil, errors.New("no unencrypted PEM private key (want EC PRIVATE KEY or PRIVATE KEY, " +
				"as `openssl ecparam -name prime256v1 -genkey -noout` writes; cosign's encrypted key files are not read)")
		}
		switch block.Type {
		case "EC PRIVATE KEY":
			return p256(x509.ParseECPrivateKey(block.Bytes))
		case "PRIVATE KEY":
			return p256(x509.ParsePKCS8PrivateKey(block.Bytes))
		}
		// Other blocks (e.g. "EC PARAMETERS" before the key) are skipped.
	}
}

func p256(key any, err error) (*ecdsa.PrivateKey, error) {
	if err != nil {
		return nil, err
	}
	ec, ok := key.(*ecdsa.PrivateKey)
	if !ok || ec.Curve != elliptic.P256() {
		return nil, errors.New("the key is not an ECDSA P-256 key")
	}
	return ec, nil
}

// PublicKeyPEM returns the public key as PEM "PUBLIC KEY" (PKIX), the form
// of cosign.pub.
func (s *Signer) PublicKeyPEM() ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(&s.key.PublicKey)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}

// Public returns the public key.
func (s *Signer) Public() *ecdsa.PublicKey { return &s.key.PublicKey }

// SignRaw returns the ASN.1 DER ECDSA signature over the SHA-256 of data.
func (s *Signer) SignRaw(data []byte) ([]byte, error) {
	sum := sha256.Sum256(data)
	return ecdsa.SignASN1(rand.Reader, s.key, sum[:])
}

// SignBlob returns the content of a .sig file for data: the base64 of
// SignRaw, as `cosign sign-blob --output-signature` writes it.
func (s *Signer) SignBlob(data []byte) ([]byte, error) {
	sig, err := s.SignRaw(data)
	if err != nil {
		return nil, err
	}
	return []byte(base64.StdEncoding.EncodeToString(sig)), nil
}

// ParsePublicKey parses a PEM "PUBLIC KEY" (cosign.pub) holding an ECDSA
// key.
func ParsePublicKey(raw []byte) (*ecdsa.PublicKey, error) {
	block, _ := pem.Decode(raw)
	if block == nil || block.Type != "PUBLIC KEY" {
		return nil, errors.New("no PEM PUBLIC KEY")
	}
	key, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, err
	}
	ec, ok := key.(*ecdsa.PublicKey)
	if !ok {
		return nil, errors.New("the public key is not an ECDSA key")
	}
	return ec, nil
}

// VerifyRaw checks sig, ASN.1 DER, against the SHA-256 of data.
func VerifyRaw(pub *ecdsa.PublicKey, data, sig []byte) error {
	sum := sha256.Sum256(data)
	if !ecdsa.VerifyASN1(pub, sum[:], sig) {
		return errors.New("signature does not match")
	}
	return nil
}

// VerifyBlob checks the content of a .sig file (base64, surrounding white
// space ignored) against data, as `cosign verify-blob --key` does.
func VerifyBlob(pub *ecdsa.PublicKey, data, sigFile []byte) error {
	sig, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(sigFile)))
	if err != nil {
		return fmt.Errorf("signature is not base64: %w", err)
	}
	return VerifyRaw(pub, data, sig)
}
