package provenance

import (
	"context"
	"testing"
	"time"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"

	"github.com/stretchr/testify/require"

	"github.com/kargo-fleet/kargo-fleet/internal/steptoken"
)

func TestVerify(t *testing.T) {
	t.Parallel()
	key, other := []byte("0123456789abcdef0123456789abcdef"), []byte("fedcba9876543210fedcba9876543210")
	id := Identity{Namespace: "shop", Stage: "prod.eu-1", Freight: "f2", Decision: RolloutDecision("prod-f2")}
	mark := Mark(key, id)
	require.Equal(t, mark, Mark(key, id), "a mark is a function of key and identity")
	for _, tc := range []struct {
		name string
		keys [][]byte
		id   Identity
		mark string
		want bool
	}{
		{name: "the controller's own", keys: [][]byte{key}, id: id, mark: mark, want: true},
		{name: "under the key being rotated out", keys: [][]byte{other, key}, id: id, mark: mark, want: true},
		{name: "another key", keys: [][]byte{other}, id: id, mark: mark},
		{name: "no mark", keys: [][]byte{key}, id: id},
		{name: "copied onto another Stage", keys: [][]byte{key}, id: Identity{"shop", "prod.eu-2", "f2", id.Decision}, mark: mark},
		{name: "copied onto other Freight", keys: [][]byte{key}, id: Identity{"shop", "prod.eu-1", "f3", id.Decision}, mark: mark},
		{name: "copied into another Project", keys: [][]byte{key}, id: Identity{"shop2", "prod.eu-1", "f2", id.Decision}, mark: mark},
		{name: "claiming another decision", keys: [][]byte{key}, id: Identity{"shop", "prod.eu-1", "f2", RevertDecision("x")}, mark: mark},
		{name: "fields shifted across the separator", keys: [][]byte{key},
			id: Identity{"shop", "prod.eu-1\x00f2", "", id.Decision}, mark: mark},
		{name: "the step token key itself does not mark", keys: [][]byte{key}, id: id, mark: steptoken.Issue(key, "shop", time.Unix(1_800_000_000, 0))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, Verify(tc.keys, tc.id, tc.mark))
		})
	}
}

func TestMarker(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := NewMarker(StepKeys{Source: steptoken.StaticKey("0123456789abcdef0123456789abcdef")})
	id := Identity{Namespace: "shop", Stage: "prod.eu-1", Freight: "f2", Decision: UndoDecision("k")}
	ann, err := m.Annotate(ctx, id, nil)
	require.NoError(t, err)
	require.Len(t, ann[fleetv1alpha1.MarkAnnotation], 64)
	ok, err := m.Verified(ctx, id, ann)
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = m.Verified(ctx, Identity{Namespace: "shop", Stage: "prod.eu-1", Freight: "f3", Decision: id.Decision}, ann)
	require.NoError(t, err)
	require.False(t, ok)

	var none *Marker
	ann, err = none.Annotate(ctx, id, map[string]string{"a": "b"})
	require.NoError(t, err)
	require.Equal(t, map[string]string{"a": "b"}, ann, "no marker, no mark")
	ok, err = none.Verified(ctx, id, ann)
	require.NoError(t, err)
	require.False(t, ok)
}
