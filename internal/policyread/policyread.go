// Package policyread reads what internal/policy decides on: the
// FreightPolicies governing a Project, the artifacts of a Freight and the
// verification of its images' signatures (internal/imagesig). The
// FleetRollout reconciler, the Promotion guard, the CLI and doctor read
// through it, so they all check the same policies against the same facts.
package policyread

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/imagesig"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/policy"
)

// maxRememberedFreight bounds the Freight artifacts kept in memory; past
// it they are forgotten and read again when needed.
const maxRememberedFreight = 1024

// Reader reads FreightPolicies and namespaces through objects (a cache)
// and Freight through freight (the API server: caches hold Freight
// metadata only). Compiled policies and the artifacts of each Freight are
// kept in memory; a Freight's name is a hash of its artifacts in Kargo, so
// what a name holds never changes. Safe for concurrent use.
type Reader struct {
	objects, freight client.Reader
	compiled         policy.Cache
	signatures       *imagesig.Verifier
	mu               sync.Mutex
	artifacts        map[types.NamespacedName]policy.Freight
}

// NewReader returns a Reader. Image signatures are verified with a
// Verifier of its own, asking registries anonymously.
func NewReader(objects, freight client.Reader) *Reader {
	return &Reader{objects: objects, freight: freight, signatures: imagesig.NewVerifier()}
}

// Signatures verifies the images of f against the signature requirements
// of governing (each image and key once; the Verifier remembers results):
// the facts policy.Check decides on. nil when no rule requires signatures.
func (r *Reader) Signatures(ctx context.Context, governing []*policy.Compiled, f *policy.Freight) policy.Signatures {
	return r.signatures.Freight(ctx, f, policy.Requirements(governing))
}

// Governing returns the compiled FreightPolicies that govern namespace, by
// name; none costs one list.
func (r *Reader) Governing(ctx context.Context, namespace string) ([]*policy.Compiled, error) {
	list := &fleetv1alpha1.FreightPolicyList{}
	if err := r.objects.List(ctx, list); err != nil {
		return nil, fmt.Errorf("error listing FreightPolicies: %w", err)
	}
	if len(list.Items) == 0 {
		return nil, nil
	}
	ns := &corev1.Namespace{}
	if err := r.objects.Get(ctx, client.ObjectKey{Name: namespace}, ns); err != nil {
		return nil, fmt.Errorf("error getting namespace %q: %w", namespace, err)
	}
	return r.compiled.Governing(list.Items, ns.Labels), nil
}

// Freight returns the artifacts of a Freight.
func (r *Reader) Freight(ctx context.Context, namespace, name string) (policy.Freight, error) {
	key := types.NamespacedName{Namespace: namespace, Name: name}
	r.mu.Lock()
	cached, ok := r.artifacts[key]
	r.mu.Unlock()
	if ok {
		return cached, nil
	}
	f := &kargo.Freight{}
	if err := r.freight.Get(ctx, key, f); err != nil {
		return policy.Freight{}, fmt.Errorf("error getting Freight %q for its FreightPolicy check: %w", name, err)
	}
	out, err := policy.FreightOf(f)
	if err != nil {
		return policy.Freight{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.artifacts == nil || len(r.artifacts) >= maxRememberedFreight {
		r.artifacts = map[types.NamespacedName]policy.Freight{}
	}
	r.artifacts[key] = out
	return out, nil
}
