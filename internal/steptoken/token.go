package steptoken

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

const (
	// tokenDomain separates step tokens from any other use of the key.
	tokenDomain = "kargo-fleet/step-token/v2\x00"
	// tokenVersion prefixes every token: "v2.<issued unix seconds>.<mac>".
	tokenVersion = "v2"
	// MinSigningKeyBytes is the shortest signing key accepted.
	MinSigningKeyBytes = 32
	// SigningKeySecretKey is the key of the signing key in its Secret.
	SigningKeySecretKey = "key"
	// PreviousSigningKeySecretKey is the key of the previous signing key in
	// the same Secret: during a rotation, tokens it signed still verify
	// while the minter replaces them.
	PreviousSigningKeySecretKey = "previous"
	// DefaultSigningKeySecret is the Secret, in the controller's namespace,
	// holding the signing key when no key file is configured. The controller
	// creates it with a random key if it is missing.
	DefaultSigningKeySecret = "kargo-fleet-step-key"
	// ManagedByLabel marks Secrets kargo-fleet writes.
	ManagedByLabel = "app.kubernetes.io/managed-by"
	// ManagedByValue is ManagedByLabel's value.
	ManagedByValue = "kargo-fleet"

	// TTL is how long a step token is valid after it was issued.
	TTL = 30 * 24 * time.Hour
	// RenewAfter is the age at which the minter replaces a token, well
	// before it expires: a token is read from its Secret by every step.
	RenewAfter = 7 * 24 * time.Hour
	// tokenClockSkew is how far in the future an issue time may be (clocks
	// of replicas differ).
	tokenClockSkew = time.Minute
)

// KeySet is the signing keys: Current signs new tokens; Previous, set
// during a rotation, still verifies the tokens it signed.
type KeySet struct {
	Current  []byte
	Previous []byte
}

// validate checks the keys' lengths.
func (k KeySet) validate() error {
	if len(k.Current) < MinSigningKeyBytes {
		return fmt.Errorf("step signing key has %d bytes, want at least %d", len(k.Current), MinSigningKeyBytes)
	}
	if len(k.Previous) > 0 && len(k.Previous) < MinSigningKeyBytes {
		return fmt.Errorf("previous step signing key has %d bytes, want at least %d", len(k.Previous), MinSigningKeyBytes)
	}
	return nil
}

// parseKeyFile reads a signing key file: the current key on its first
// line and, optionally, the previous one on the next non-blank line.
// Surrounding spaces and CR line ends are dropped. A third key is an error:
// it would otherwise be glued to the previous key and verify nothing.
func parseKeyFile(raw []byte) (KeySet, error) {
	var lines [][]byte
	for line := range bytes.SplitSeq(raw, []byte("\n")) {
		if line = bytes.TrimSpace(line); len(line) > 0 {
			lines = append(lines, line)
		}
	}
	switch len(lines) {
	case 0:
		return KeySet{}, nil
	case 1:
		return KeySet{Current: lines[0]}, nil
	case 2:
		return KeySet{Current: lines[0], Previous: lines[1]}, nil
	}
	return KeySet{}, fmt.Errorf("step signing key file has %d keys, want the current one and at most a previous one", len(lines))
}

// Issue returns a Project's step token issued at the given time:
// "v2.<issued unix seconds>.<mac>", the mac being the unpadded base64url
// HMAC-SHA256 of the Project's name and the issue time under the
// server-held key. A token is worth nothing in another Project or after
// TTL, and the server needs no per-Project state to check it.
func Issue(key []byte, project string, issued time.Time) string {
	iat := strconv.FormatInt(issued.Unix(), 10)
	return tokenVersion + "." + iat + "." + tokenMAC(key, project, iat)
}

// tokenMAC returns the mac of a token.
func tokenMAC(key []byte, project, iat string) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(tokenDomain))
	mac.Write([]byte(project))
	mac.Write([]byte{0})
	mac.Write([]byte(iat))
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// Verdict is what Check makes of a token.
type Verdict int

// Verdicts of Check.
const (
	// Invalid is a token not signed for this Project by either key.
	Invalid Verdict = iota
	// Expired is a signed token older than TTL, or issued in the future.
	Expired
	// Revoked is a signed token the Project namespace's annotation revokes.
	Revoked
	// Valid is a token to accept.
	Valid
)

// Check returns the verdict on a Project's token at now, and its issue
// time when it is signed by one of the keys.
func Check(keys KeySet, project, token string, now time.Time, revoked Revocation) (Verdict, time.Time) {
	issued, ok := Verify(keys, project, token)
	switch {
	case !ok:
		return Invalid, time.Time{}
	case issued.After(now.Add(tokenClockSkew)) || now.Sub(issued) > TTL:
		return Expired, issued
	case revoked.Refuses(issued):
		return Revoked, issued
	}
	return Valid, issued
}

// Verify reports, in constant time, whether token is the Project's
// under the current or the previous key, and returns its issue time.
func Verify(keys KeySet, project, token string) (time.Time, bool) {
	version, rest, ok := strings.Cut(token, ".")
	if !ok || version != tokenVersion {
		return time.Time{}, false
	}
	iat, mac, ok := strings.Cut(rest, ".")
	if !ok || len(iat) == 0 || len(iat) > 12 {
		return time.Time{}, false
	}
	sec, err := strconv.ParseInt(iat, 10, 64)
	if err != nil || sec < 0 || strconv.FormatInt(sec, 10) != iat {
		return time.Time{}, false
	}
	valid := 0
	for _, key := range [][]byte{keys.Current, keys.Previous} {
		if len(key) > 0 {
			valid |= subtle.ConstantTimeCompare([]byte(tokenMAC(key, project, iat)), []byte(mac))
		}
	}
	return time.Unix(sec, 0), valid == 1
}

// Revocation is what a Project namespace's StepTokenRevokedAnnotation
// revokes.
type Revocation struct {
	// All revokes every token: none is accepted or minted.
	All bool
	// Before revokes the tokens issued before it.
	Before time.Time
}

// RevocationOf reads the revocation from a Project namespace's annotations.
func RevocationOf(annotations map[string]string) Revocation {
	v, ok := annotations[fleetv1alpha1.StepTokenRevokedAnnotation]
	if !ok {
		return Revocation{}
	}
	if t, err := time.Parse(time.RFC3339, strings.TrimSpace(v)); err == nil {
		return Revocation{Before: t}
	}
	return Revocation{All: true}
}

// Refuses reports whether a token issued at the given time is revoked.
func (r Revocation) Refuses(issued time.Time) bool {
	return r.All || issued.Before(r.Before)
}

// KeySource provides the signing keys step tokens are derived from.
type KeySource interface {
	// SigningKeys returns the keys.
	SigningKeys(ctx context.Context) (KeySet, error)
}

// StaticKey is a fixed signing key.
type StaticKey []byte

// SigningKeys implements KeySource.
func (k StaticKey) SigningKeys(context.Context) (KeySet, error) {
	keys := KeySet{Current: k}
	return keys, keys.validate()
}

// SecretKey reads the signing keys from a file, or else from a Secret which
// it creates with a random key when missing, so that every replica
// converges on the same key without configuration. Nothing is kept between
// calls: give it a reader backed by an informer on the one Secret (the
// manager does) and every replica uses a new key as soon as its watch sees
// it, with no restart.
//
// The Secret holds the key under SigningKeySecretKey and, during a
// rotation, the key it replaces under PreviousSigningKeySecretKey. A key
// file holds the current key on its first line and, optionally, the
// previous one on its second.
type SecretKey struct {
	file   string
	secret types.NamespacedName
	reader client.Reader
	writer client.Writer
}

// NewSecretKey returns a KeySource reading file when set, else the Secret.
func NewSecretKey(file string, secret types.NamespacedName, reader client.Reader, writer client.Writer) *SecretKey {
	return &SecretKey{file: file, secret: secret, reader: reader, writer: writer}
}

// Secret returns the Secret holding the keys, empty when read from a file.
func (k *SecretKey) Secret() types.NamespacedName {
	if k.file != "" {
		return types.NamespacedName{}
	}
	return k.secret
}

// SigningKeys implements KeySource.
func (k *SecretKey) SigningKeys(ctx context.Context) (KeySet, error) {
	keys, err := k.load(ctx)
	if err != nil {
		return KeySet{}, err
	}
	return keys, keys.validate()
}

func (k *SecretKey) load(ctx context.Context) (KeySet, error) {
	if k.file != "" {
		raw, err := os.ReadFile(k.file)
		if err != nil {
			return KeySet{}, fmt.Errorf("error reading step signing key file: %w", err)
		}
		return parseKeyFile(raw)
	}
	for range 2 {
		var s corev1.Secret
		// The cache's object, not a copy: every mark the controller writes
		// or checks reads the keys, and the key set is only ever read.
		err := k.reader.Get(ctx, k.secret, &s, client.UnsafeDisableDeepCopy)
		if err == nil {
			return KeySet{Current: s.Data[SigningKeySecretKey], Previous: s.Data[PreviousSigningKeySecretKey]}, nil
		}
		if !apierrors.IsNotFound(err) {
			return KeySet{}, fmt.Errorf("error getting Secret %s: %w", k.secret, err)
		}
		key := make([]byte, MinSigningKeyBytes)
		if _, err := rand.Read(key); err != nil {
			return KeySet{}, fmt.Errorf("error generating step signing key: %w", err)
		}
		err = k.writer.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: k.secret.Namespace, Name: k.secret.Name,
				Labels: map[string]string{ManagedByLabel: ManagedByValue},
			},
			Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{SigningKeySecretKey: key},
		})
		if err == nil {
			log.FromContext(ctx).Info("Created step signing key", "Secret", k.secret)
			return KeySet{Current: key}, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return KeySet{}, fmt.Errorf("error creating Secret %s: %w", k.secret, err)
		}
		// Another replica created it first: read theirs, once a cached
		// reader has seen it.
		_ = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 5*time.Second, true,
			func(ctx context.Context) (bool, error) {
				return !apierrors.IsNotFound(k.reader.Get(ctx, k.secret, &corev1.Secret{})), nil
			})
	}
	return KeySet{}, fmt.Errorf("error getting Secret %s: created and deleted concurrently", k.secret)
}
