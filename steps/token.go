package steps

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
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

const (
	// tokenDomain separates step tokens from any other use of the key.
	tokenDomain = "kargo-fleet/step-token/v1\x00"
	// MinSigningKeyBytes is the shortest signing key accepted.
	MinSigningKeyBytes = 32
	// SigningKeySecretKey is the key of the signing key in its Secret.
	SigningKeySecretKey = "key"
	// DefaultSigningKeySecret is the Secret, in the controller's namespace,
	// holding the signing key when no key file is configured. The controller
	// creates it with a random key if it is missing.
	DefaultSigningKeySecret = "kargo-fleet-step-key"
	// ManagedByLabel marks Secrets kargo-fleet writes.
	ManagedByLabel = "app.kubernetes.io/managed-by"
	// ManagedByValue is ManagedByLabel's value.
	ManagedByValue = "kargo-fleet"
)

// DeriveToken returns a Project's step token: the unpadded base64url
// HMAC-SHA256 of the Project's name under the server-held key. A token is
// worth nothing in another Project, and the server needs no per-Project state
// to check it.
func DeriveToken(key []byte, project string) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(tokenDomain))
	mac.Write([]byte(project))
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// verifyToken reports, in constant time, whether token is the Project's.
func verifyToken(key []byte, project, token string) bool {
	want := DeriveToken(key, project)
	return subtle.ConstantTimeCompare([]byte(want), []byte(token)) == 1
}

// KeySource provides the signing key step tokens are derived from.
type KeySource interface {
	// SigningKey returns the key.
	SigningKey(ctx context.Context) ([]byte, error)
}

// StaticKey is a fixed signing key.
type StaticKey []byte

// SigningKey implements KeySource.
func (k StaticKey) SigningKey(context.Context) ([]byte, error) {
	if len(k) < MinSigningKeyBytes {
		return nil, fmt.Errorf("signing key has %d bytes, want at least %d", len(k), MinSigningKeyBytes)
	}
	return k, nil
}

// SecretKey reads the signing key from a file, or else from a Secret which it
// creates with a random key when missing, so that every replica converges on
// the same key without configuration. The key is read once per process:
// rotate it by changing the Secret (or file) and restarting the controller.
//
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;create
type SecretKey struct {
	file   string
	secret types.NamespacedName
	reader client.Reader
	writer client.Writer

	mu  sync.Mutex
	key []byte
}

// NewSecretKey returns a KeySource reading file when set, else the Secret.
func NewSecretKey(file string, secret types.NamespacedName, reader client.Reader, writer client.Writer) *SecretKey {
	return &SecretKey{file: file, secret: secret, reader: reader, writer: writer}
}

// SigningKey implements KeySource.
func (k *SecretKey) SigningKey(ctx context.Context) ([]byte, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.key != nil {
		return k.key, nil
	}
	key, err := k.load(ctx)
	if err != nil {
		return nil, err
	}
	if len(key) < MinSigningKeyBytes {
		return nil, fmt.Errorf("step signing key has %d bytes, want at least %d", len(key), MinSigningKeyBytes)
	}
	k.key = key
	return key, nil
}

func (k *SecretKey) load(ctx context.Context) ([]byte, error) {
	if k.file != "" {
		raw, err := os.ReadFile(k.file)
		if err != nil {
			return nil, fmt.Errorf("error reading step signing key file: %w", err)
		}
		return bytes.TrimSpace(raw), nil
	}
	for range 2 {
		var s corev1.Secret
		err := k.reader.Get(ctx, k.secret, &s)
		if err == nil {
			return s.Data[SigningKeySecretKey], nil
		}
		if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("error getting Secret %s: %w", k.secret, err)
		}
		key := make([]byte, MinSigningKeyBytes)
		if _, err := rand.Read(key); err != nil {
			return nil, fmt.Errorf("error generating step signing key: %w", err)
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
			return key, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("error creating Secret %s: %w", k.secret, err)
		}
		// Another replica created it first: read theirs.
	}
	return nil, fmt.Errorf("error getting Secret %s: created and deleted concurrently", k.secret)
}
