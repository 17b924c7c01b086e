package webhookcert

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"time"
)

// Lifetimes of the generated certificates. Each is renewed when less than a
// third of its lifetime is left.
const (
	// CAValidity is how long the generated CA is valid.
	CAValidity = 10 * 365 * 24 * time.Hour
	// ServingValidity is how long a serving certificate is valid.
	ServingValidity = 365 * 24 * time.Hour
)

// Keys of the Secret's data.
const (
	// KeyCert is the serving certificate (PEM).
	KeyCert = "tls.crt"
	// KeyKey is the serving certificate's private key (PEM).
	KeyKey = "tls.key"
	// KeyCA is the CA that signs it (PEM).
	KeyCA = "ca.crt"
	// KeyCAKey is the CA's private key (PEM).
	KeyCAKey = "ca.key"
	// KeyBundle is what the webhook configuration trusts: the CA, and a
	// previous CA while it is still valid (PEM).
	KeyBundle = "ca-bundle.crt"
)

// Bundle is the Secret's content.
type Bundle map[string][]byte

// Decision is what Plan decides about a Bundle.
type Decision int

const (
	// Keep the bundle as it is.
	Keep Decision = iota
	// RenewServing issues a new serving certificate with the same CA.
	RenewServing
	// RenewCA issues a new CA and serving certificate.
	RenewCA
)

// Plan decides whether b is fit to serve dnsNames at now. It is pure.
func Plan(b Bundle, dnsNames []string, now time.Time) Decision {
	ca, caErr := parseCert(b[KeyCA])
	// A certificate that may not sign others (a serving certificate put in
	// the CA's place) is no CA: every serving certificate it signs fails.
	if caErr != nil || !ca.BasicConstraintsValid || !ca.IsCA ||
		(ca.KeyUsage != 0 && ca.KeyUsage&x509.KeyUsageCertSign == 0) || !keyOf(ca, b[KeyCAKey]) || due(ca, now) {
		return RenewCA
	}
	cert, err := parseCert(b[KeyCert])
	if err != nil || !keyOf(cert, b[KeyKey]) || due(cert, now) || cert.CheckSignatureFrom(ca) != nil ||
		!holds(b[KeyBundle], ca) {
		return RenewServing
	}
	for _, n := range dnsNames {
		if cert.VerifyHostname(n) != nil {
			return RenewServing
		}
	}
	return Keep
}

// keyOf reports whether keyPEM is the private key of c: a key that does
// not match its certificate serves nothing.
func keyOf(c *x509.Certificate, keyPEM []byte) bool {
	key, err := parseKey(keyPEM)
	return err == nil && key.PublicKey.Equal(c.PublicKey)
}

// holds reports whether the PEM bundle holds c, so that what the webhook
// configuration trusts verifies what c signs.
func holds(bundle []byte, c *x509.Certificate) bool {
	for rest := bundle; ; {
		var blk *pem.Block
		if blk, rest = pem.Decode(rest); blk == nil {
			return false
		}
		if bytes.Equal(blk.Bytes, c.Raw) {
			return true
		}
	}
}

// due reports whether less than a third of c's lifetime is left at now.
func due(c *x509.Certificate, now time.Time) bool {
	life := c.NotAfter.Sub(c.NotBefore)
	return now.Before(c.NotBefore) || c.NotAfter.Sub(now) < life/3
}

// Apply returns b after decision d, issued at now for dnsNames. Keep
// returns b unchanged.
func Apply(b Bundle, d Decision, dnsNames []string, now time.Time) (Bundle, error) {
	out := Bundle{}
	for k, v := range b {
		out[k] = v
	}
	if d == Keep {
		return out, nil
	}
	if d == RenewCA {
		caPEM, caKeyPEM, err := issue(nil, nil, "kargo-fleet webhook CA", nil, now, CAValidity)
		if err != nil {
			return nil, err
		}
		out[KeyBundle] = append(append([]byte{}, caPEM...), stillValid(b[KeyCA], now)...)
		out[KeyCA], out[KeyCAKey] = caPEM, caKeyPEM
	}
	ca, err := parseCert(out[KeyCA])
	if err != nil {
		return nil, err
	}
	caKey, err := parseKey(out[KeyCAKey])
	if err != nil {
		return nil, err
	}
	if !holds(out[KeyBundle], ca) {
		out[KeyBundle] = append(append([]byte{}, out[KeyCA]...), stillValid(out[KeyBundle], now)...)
	}
	name := "kargo-fleet-webhook"
	if len(dnsNames) > 0 {
		name = dnsNames[0]
	}
	certPEM, keyPEM, err := issue(ca, caKey, name, dnsNames, now, ServingValidity)
	if err != nil {
		return nil, err
	}
	out[KeyCert], out[KeyKey] = certPEM, keyPEM
	return out, nil
}

// stillValid returns the PEM of the certificates in pemBytes that are valid
// at now.
func stillValid(pemBytes []byte, now time.Time) []byte {
	var out bytes.Buffer
	for rest := pemBytes; ; {
		var blk *pem.Block
		blk, rest = pem.Decode(rest)
		if blk == nil {
			return out.Bytes()
		}
		c, err := x509.ParseCertificate(blk.Bytes)
		if err == nil && now.Before(c.NotAfter) {
			_ = pem.Encode(&out, blk)
		}
	}
}

// issue creates a key and a certificate for it, signed by parent (self-signed
// CA when parent is nil).
func issue(parent *x509.Certificate, parentKey *ecdsa.PrivateKey, cn string, dnsNames []string,
	now time.Time, validity time.Duration) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("error generating key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    now.Add(-5 * time.Minute),
		NotAfter:     now.Add(validity),
		DNSNames:     dnsNames,
	}
	signer, signerKey := tmpl, key
	if parent == nil {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
		tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	} else {
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		signer, signerKey = parent, parentKey
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signerKey)
	if err != nil {
		return nil, nil, fmt.Errorf("error creating certificate: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}

func parseCert(b []byte) (*x509.Certificate, error) {
	blk, _ := pem.Decode(b)
	if blk == nil {
		return nil, errors.New("no PEM certificate")
	}
	return x509.ParseCertificate(blk.Bytes)
}

func parseKey(b []byte) (*ecdsa.PrivateKey, error) {
	blk, _ := pem.Decode(b)
	if blk == nil {
		return nil, errors.New("no PEM key")
	}
	return x509.ParseECPrivateKey(blk.Bytes)
}
