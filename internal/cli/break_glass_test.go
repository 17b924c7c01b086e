package cli

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

func TestBreakGlassError(t *testing.T) {
	t.Parallel()
	unavailable := apierrors.NewInvalid(schema.GroupKind{Group: "kargo.akuity.io", Kind: "Promotion"}, "p",
		field.ErrorList{field.Invalid(field.NewPath("spec", "freight"), "f2", "Freight is not available to this Stage")})
	tests := []struct {
		name     string
		err      error
		approve  bool
		original string
	}{
		{name: "Freight not yet approved for the Stage", err: unavailable, approve: true, original: "not available to this Stage"},
		{name: "refused by the fleet's guard", err: errors.New(`admission webhook "promotions.fleet.kargo-fleet.io" denied the request: may not break glass`),
			original: "may not break glass"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := breakGlassError(tt.err, "shop", "f2", "prod.eu-1")
			require.ErrorIs(t, got, tt.err, "the API server's error stays inspectable")
			require.Contains(t, got.Error(), tt.original)
			require.Contains(t, got.Error(), `Freight f2 into Stage "prod.eu-1"`)
			if tt.approve {
				require.Contains(t, got.Error(), "kargo approve --project shop --freight f2 --stage prod.eu-1")
			} else {
				require.NotContains(t, got.Error(), "kargo approve")
			}
		})
	}
}

func TestBreakGlassCommand_dryRunAndOutput(t *testing.T) {
	t.Parallel()
	c := newFakeClient("", fleetStage("", "", goodFreight), testutil.MakeFreight("shop", badFreight).Obj())
	var out bytes.Buffer
	got, err := execute(newBreakGlassCommand(testStreams(&out), kubeOptions{client: c}), &out,
		"prod", "-n", "shop", "--target", "eu-west-1-003", "--freight", badFreight, "--reason", "INC-1", "--dry-run")
	require.NoError(t, err)
	require.Contains(t, got, "would be admitted (dry run: nothing was created)")
	list := &kargo.PromotionList{}
	require.NoError(t, c.List(context.Background(), list))
	require.Empty(t, list.Items, "a dry run creates nothing")

	out.Reset()
	got, err = execute(newBreakGlassCommand(testStreams(&out), kubeOptions{client: c}), &out,
		"prod", "-n", "shop", "--target", "eu-west-1-003", "--freight", badFreight, "--reason", "INC-1", "-o", "yaml")
	require.NoError(t, err)
	require.Contains(t, got, "kind: Promotion")
	require.Contains(t, got, "fleet.kargo-fleet.io/break-glass-reason: INC-1")
	require.NoError(t, c.List(context.Background(), list))
	require.Len(t, list.Items, 1)
}

func TestResolveFreight(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newFakeClient("",
		testutil.MakeFreight("shop", "3f2a9c1d0e").Alias("v1").Obj(),
		testutil.MakeFreight("shop", "3f2a9c1f77").Obj(),
		testutil.MakeFreight("shop", "7b1e0aa912").Obj())
	for _, tc := range []struct{ ref, want, err string }{
		{ref: "7b1e0aa912", want: "7b1e0aa912"},
		{ref: "v1", want: "3f2a9c1d0e"},
		{ref: "7b1e0aa", want: "7b1e0aa912"},
		{ref: "3f2a9c1", err: `2 Freight in namespace "shop" have names starting with "3f2a9c1"`},
		{ref: "7b1e0a", err: `no Freight named or aliased "7b1e0a"`},
	} {
		f, err := resolveFreight(ctx, c, "shop", tc.ref)
		if tc.err != "" {
			require.ErrorContains(t, err, tc.err, tc.ref)
			continue
		}
		require.NoError(t, err, tc.ref)
		require.Equal(t, tc.want, f.Name, tc.ref)
	}
}
