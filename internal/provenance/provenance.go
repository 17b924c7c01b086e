// Package provenance marks the Kargo Promotions kargo-fleet's controller
// creates, so that a guard can tell them from Promotions anyone else made
// with the same labels.
//
// Labels and annotations on a Promotion are whatever its creator wrote:
// anyone who may create a Promotion can label it as a rollout's, a drift
// revert or an undo. The Promotion admission guard trusts the controller by
// the admission request's user; the post-hoc target guard, which sees the
// object only, trusts a mark: an HMAC over the Promotion's namespace,
// Stage, Freight and the decision it carries out, keyed with a key derived
// from the step token signing key, which only the controller reads. A mark
// copied onto another Promotion verifies only for the very same Stage,
// Freight and decision; the guard also requires that decision to have been
// open when the copy was created.
package provenance

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/steptoken"
)

// derivation separates the mark's key from the step token key it is
// derived from: a step token never verifies as a mark, nor a mark as a
// token.
const derivation = "kargo-fleet promotion provenance v1"

// Identity is what a mark binds.
type Identity struct {
	// Namespace is the Promotion's Project.
	Namespace string
	// Stage is the Stage it promotes.
	Stage string
	// Freight is the Freight it promotes.
	Freight string
	// Decision is the kargo-fleet decision it carries out (DecisionOf).
	Decision string
}

func (id Identity) message() []byte {
	return []byte(strings.Join([]string{id.Namespace, id.Stage, id.Freight, id.Decision}, "\x00"))
}

// Mark returns the mark of id under key.
func Mark(key []byte, id Identity) string {
	k := hmac.New(sha256.New, key)
	k.Write([]byte(derivation))
	h := hmac.New(sha256.New, k.Sum(nil))
	h.Write(id.message())
	return hex.EncodeToString(h.Sum(nil))
}

// Verify reports whether mark is id's mark under one of keys.
func Verify(keys [][]byte, id Identity, mark string) bool {
	if mark == "" {
		return false
	}
	for _, key := range keys {
		if len(key) > 0 && hmac.Equal([]byte(Mark(key, id)), []byte(mark)) {
			return true
		}
	}
	return false
}

// Keys gives the current key and the keys that still verify (the current
// one first, then one being rotated out).
type Keys interface {
	MarkKeys(ctx context.Context) (current []byte, verify [][]byte, err error)
}

// Marker marks and verifies Promotions with Keys.
type Marker struct {
	keys Keys
}

// NewMarker returns a Marker over keys; a nil Marker marks nothing and
// verifies nothing.
func NewMarker(keys Keys) *Marker {
	return &Marker{keys: keys}
}

// Annotate sets the mark of id on annotations (creating the map when nil)
// and returns it.
func (m *Marker) Annotate(ctx context.Context, id Identity, annotations map[string]string) (map[string]string, error) {
	if m == nil {
		return annotations, nil
	}
	current, _, err := m.keys.MarkKeys(ctx)
	if err != nil {
		return annotations, fmt.Errorf("error reading the key that marks kargo-fleet's Promotions: %w", err)
	}
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[fleetv1alpha1.MarkAnnotation] = Mark(current, id)
	return annotations, nil
}

// Verified reports whether a Promotion's annotations carry id's mark.
func (m *Marker) Verified(ctx context.Context, id Identity, annotations map[string]string) (bool, error) {
	if m == nil {
		return false, nil
	}
	_, keys, err := m.keys.MarkKeys(ctx)
	if err != nil {
		return false, fmt.Errorf("error reading the keys that verify kargo-fleet's Promotions: %w", err)
	}
	return Verify(keys, id, annotations[fleetv1alpha1.MarkAnnotation]), nil
}

// Decisions a mark binds, by the label that names them on the Promotion.

// RolloutDecision is the decision of a rollout's target Promotion.
func RolloutDecision(rollout string) string { return "rollout:" + rollout }

// RevertDecision is the decision of a drift revert.
func RevertDecision(key string) string { return "revert:" + key }

// UndoDecision is the decision of the target guard's undo of a refused
// Promotion.
func UndoDecision(key string) string { return "undo:" + key }

// StepKeys are the mark keys derived from the step token signing keys.
type StepKeys struct {
	Source steptoken.KeySource
}

// MarkKeys implements Keys.
func (k StepKeys) MarkKeys(ctx context.Context) ([]byte, [][]byte, error) {
	set, err := k.Source.SigningKeys(ctx)
	if err != nil {
		return nil, nil, err
	}
	return set.Current, [][]byte{set.Current, set.Previous}, nil
}
