// Package cacheindex reads objects from the manager's cache through an
// index of its own and hands back the cache's own objects: no list is
// built and no object is copied. A reconcile that reads every target of a
// 10,000-target fleet on each pass would otherwise copy 10,000 structs
// into a fresh list each time (controller-runtime's List copies each
// object's struct even without a deep copy), and that garbage, not the
// reading, is what made a target's cost grow with the fleet.
//
// Callers must treat what Get returns as read only: the objects are the
// informer's.
package cacheindex

import (
	"context"
	"fmt"
	"sync"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Index is a secondary index of one kind of object in the manager's
// cache: each object is filed under the values keys returns, within its
// namespace.
type Index[T client.Object] struct {
	name string
	keys func(T) []string

	mu      sync.RWMutex
	indexer toolscache.Indexer
}

// New returns an Index named name (unique among the indexes of the kind)
// filing each object under keys(object).
func New[T client.Object](name string, keys func(T) []string) *Index[T] {
	return &Index[T]{name: name, keys: keys}
}

// indexerOf is what the informers of controller-runtime's cache are
// underneath (client-go's SharedIndexInformer).
type indexerOf interface {
	GetIndexer() toolscache.Indexer
}

// Register adds the index to the informer of obj's kind in c. Call it
// before the cache starts, or the informer indexes what it holds by then.
func (ix *Index[T]) Register(ctx context.Context, c cache.Cache, obj T) error {
	inf, err := c.GetInformer(ctx, obj)
	if err != nil {
		return fmt.Errorf("error getting the informer for index %q: %w", ix.name, err)
	}
	withIndexer, ok := inf.(indexerOf)
	if !ok {
		return fmt.Errorf("the informer for index %q (%T) has no indexer", ix.name, inf)
	}
	if err := inf.AddIndexers(toolscache.Indexers{ix.name: ix.file}); err != nil {
		return fmt.Errorf("error adding index %q: %w", ix.name, err)
	}
	ix.mu.Lock()
	ix.indexer = withIndexer.GetIndexer()
	ix.mu.Unlock()
	return nil
}

// file returns the index keys of o: its namespace and each of its values.
func (ix *Index[T]) file(o any) ([]string, error) {
	t, ok := o.(T)
	if !ok {
		return nil, nil
	}
	values := ix.keys(t)
	if len(values) == 0 {
		return nil, nil
	}
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = Key(t.GetNamespace(), v)
	}
	return out, nil
}

// Key is the index key of value in namespace.
func Key(namespace, value string) string {
	return namespace + "/" + value
}

// Get returns the cache's objects in namespace filed under value, in no
// particular order; ok is false when the index is not registered (the
// caller then lists another way).
func (ix *Index[T]) Get(namespace, value string) (_ []T, ok bool, _ error) {
	ix.mu.RLock()
	indexer := ix.indexer
	ix.mu.RUnlock()
	if indexer == nil {
		return nil, false, nil
	}
	items, err := indexer.ByIndex(ix.name, Key(namespace, value))
	if err != nil {
		return nil, true, fmt.Errorf("error reading index %q: %w", ix.name, err)
	}
	out := make([]T, 0, len(items))
	for _, it := range items {
		if t, ok := it.(T); ok {
			out = append(out, t)
		}
	}
	return out, true, nil
}
