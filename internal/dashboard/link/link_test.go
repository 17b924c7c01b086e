package link

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFleetStageURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, base, ns, fs, want string
	}{
		{name: "plain", base: "http://127.0.0.1:3100", ns: "shop", fs: "prod",
			want: "http://127.0.0.1:3100/projects/shop/fleetstages/prod"},
		{name: "trailing slash and path", base: "https://fleet.example.com/dash/", ns: "shop", fs: "prod",
			want: "https://fleet.example.com/dash/projects/shop/fleetstages/prod"},
		{name: "escaped", base: "https://x.example.com", ns: "a b", fs: "c/d",
			want: "https://x.example.com/projects/a%20b/fleetstages/c%2Fd"},
		{name: "not a URL", base: "fleet.example.com", ns: "shop", fs: "prod", want: ""},
		{name: "empty", base: "", ns: "shop", fs: "prod", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, FleetStageURL(tt.base, tt.ns, tt.fs))
		})
	}
}

func TestKargoStageURL(t *testing.T) {
	t.Parallel()
	require.Equal(t, "https://kargo.example.com/project/shop/stage/prod.eu-west-1-01",
		KargoStageURL("https://kargo.example.com/", "shop", "prod.eu-west-1-01"))
	require.Empty(t, KargoStageURL("", "shop", "prod"))
}
