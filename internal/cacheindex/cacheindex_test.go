package cacheindex

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// oneInformer is a cache whose only informer is inf.
type oneInformer struct {
	cache.Cache
	inf toolscache.SharedIndexInformer
}

func (c oneInformer) GetInformer(context.Context, client.Object, ...cache.InformerGetOption) (cache.Informer, error) {
	return c.inf, nil
}

func stage(ns, name, fleet string) *kargo.Stage {
	return &kargo.Stage{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"fleet": fleet}}}
}

func TestIndexReturnsTheCachesOwnObjects(t *testing.T) {
	t.Parallel()
	inf := toolscache.NewSharedIndexInformer(&toolscache.ListWatch{}, &kargo.Stage{}, 0, toolscache.Indexers{})
	ix := New("by-fleet", func(st *kargo.Stage) []string {
		if f := st.Labels["fleet"]; f != "" {
			return []string{f}
		}
		return nil
	})
	_, ok, err := ix.Get("shop", "prod")
	require.NoError(t, err)
	require.False(t, ok, "an index not registered says so, so the caller lists another way")

	require.NoError(t, ix.Register(t.Context(), oneInformer{inf: inf}, &kargo.Stage{}))
	a, b := stage("shop", "prod.a", "prod"), stage("shop", "prod.b", "prod")
	for _, st := range []*kargo.Stage{a, b, stage("shop", "staging.a", "staging"), stage("other", "prod.a", "prod"),
		stage("shop", "plain", "")} {
		require.NoError(t, inf.GetIndexer().Add(st))
	}
	got, ok, err := ix.Get("shop", "prod")
	require.NoError(t, err)
	require.True(t, ok)
	require.ElementsMatch(t, []*kargo.Stage{a, b}, got)
	for _, st := range got {
		require.True(t, st == a || st == b, "the cache's own pointer, not a copy")
	}
	none, ok, err := ix.Get("shop", "canary")
	require.NoError(t, err)
	require.True(t, ok)
	require.Empty(t, none)

	// An update refiles the object.
	moved := stage("shop", "prod.b", "staging")
	require.NoError(t, inf.GetIndexer().Update(moved))
	got, _, err = ix.Get("shop", "prod")
	require.NoError(t, err)
	require.Equal(t, []*kargo.Stage{a}, got)
}
