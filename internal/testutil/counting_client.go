package testutil

import (
	"context"
	"sync/atomic"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CountingClient wraps a client and counts the writes made through it, so
// tests can assert how many API writes a reconcile made. Access and token
// reviews are not writes: the API server answers them and stores nothing.
type CountingClient struct {
	client.Client
	writes atomic.Int64
}

// NewCountingClient wraps c.
func NewCountingClient(c client.Client) *CountingClient { return &CountingClient{Client: c} }

// Writes returns the number of writes so far.
func (c *CountingClient) Writes() int64 { return c.writes.Load() }

// Create counts and creates.
func (c *CountingClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	switch obj.(type) {
	case *authorizationv1.SubjectAccessReview, *authorizationv1.SelfSubjectAccessReview,
		*authenticationv1.TokenReview, *authenticationv1.SelfSubjectReview:
	default:
		c.writes.Add(1)
	}
	return c.Client.Create(ctx, obj, opts...)
}

// Update counts and updates.
func (c *CountingClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	c.writes.Add(1)
	return c.Client.Update(ctx, obj, opts...)
}

// Patch counts and patches.
func (c *CountingClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	c.writes.Add(1)
	return c.Client.Patch(ctx, obj, patch, opts...)
}

// Delete counts and deletes.
func (c *CountingClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	c.writes.Add(1)
	return c.Client.Delete(ctx, obj, opts...)
}

// Status returns a status writer that counts too.
func (c *CountingClient) Status() client.SubResourceWriter {
	return &countingStatus{SubResourceWriter: c.Client.Status(), writes: &c.writes}
}

type countingStatus struct {
	client.SubResourceWriter
	writes *atomic.Int64
}

func (s *countingStatus) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	s.writes.Add(1)
	return s.SubResourceWriter.Update(ctx, obj, opts...)
}

func (s *countingStatus) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	s.writes.Add(1)
	return s.SubResourceWriter.Patch(ctx, obj, patch, opts...)
}
