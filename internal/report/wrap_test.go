package report

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

func Test_wrapMessage(t *testing.T) {
	t.Parallel()
	const argo = `Promotion prod-c01.01jdq8x2.9f8e7d6 failed: step "sync" (argocd-update): error updating ` +
		`Argo CD Application "c01" in namespace "argocd": Argo CD Application "c01" in namespace "argocd" ` +
		`is not authorized to be updated by Stage "prod-c01" in namespace "shop"`
	tests := []struct {
		name     string
		in       string
		width    int
		maxLines int
		want     []string
	}{
		{name: "fits", in: "Promotion failed", width: 40, maxLines: 3, want: []string{"Promotion failed"}},
		{name: "empty", in: "", width: 40, maxLines: 3, want: []string{""}},
		{name: "whitespace collapsed", in: "a\n  b\tc", width: 40, maxLines: 3, want: []string{"a b c"}},
		{
			name: "wrapped between words", in: "the quick brown fox jumps over the lazy dog near the river bank",
			width: 30, maxLines: 3,
			want: []string{"the quick brown fox jumps over", "the lazy dog near the river", "bank"},
		},
		{
			name: "long word split", in: strings.Repeat("x", 70), width: 30, maxLines: 3,
			want: []string{strings.Repeat("x", 30), strings.Repeat("x", 30), strings.Repeat("x", 10)},
		},
		{
			name: "too long keeps both ends", in: argo, width: 60, maxLines: 3,
			want: []string{
				`Promotion prod-c01.01jdq8x2.9f8e7d6 failed: step "sync" … CD`,
				`Application "c01" in namespace "argocd" is not authorized to`,
				`be updated by Stage "prod-c01" in namespace "shop"`,
			},
		},
		{name: "narrow width is raised", in: argo, width: 5, maxLines: 1, want: []string{
			`Promotion … namespace "shop"`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := wrapMessage(tt.in, tt.width, tt.maxLines)
			require.Equal(t, tt.want, got)
			require.LessOrEqual(t, len(got), max(tt.maxLines, 1))
			for _, l := range got {
				require.LessOrEqual(t, utf8.RuneCountInString(l), max(tt.width, minWrapWidth), l)
			}
		})
	}
}
