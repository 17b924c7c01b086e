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

func TestFitLines(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		in    string
		width int
		want  string
	}{
		{name: "fits", in: "short line\n", width: 80, want: "short line\n"},
		{name: "no width", in: strings.Repeat("word ", 30), width: 0, want: strings.Repeat("word ", 30)},
		{
			name:  "breaks after a comma near the end, goes on two deeper",
			in:    "FleetRollout prod-1 (current): Rollback to v1.4.0 (1a2b3c4), RollingBack, running for 46s",
			width: 80,
			want:  "FleetRollout prod-1 (current): Rollback to v1.4.0 (1a2b3c4), RollingBack,\n  running for 46s",
		},
		{
			name:  "a label column is kept",
			in:    "  Targets   203 candidates, 200 selected, 3 excluded, 0 unassigned (ExcludeLabel 3)",
			width: 60,
			want:  "  Targets   203 candidates, 200 selected, 3 excluded,\n            0 unassigned (ExcludeLabel 3)",
		},
		{
			name:  "no comma: between words",
			in:    "    waiting: kargo approve --project shop --freight 1a2b3c4 --stage prod-critical",
			width: 50,
			want:  "    waiting: kargo approve --project shop\n      --freight 1a2b3c4 --stage prod-critical",
		},
		{
			name:  "colour sequences take no room",
			in:    "\x1b[1mFleetStage\x1b[0m shop/prod: \x1b[32mReady\x1b[0m, 200 targets",
			width: 40,
			want:  "\x1b[1mFleetStage\x1b[0m shop/prod: \x1b[32mReady\x1b[0m, 200 targets",
		},
		{
			name:  "nothing to break at stays whole",
			in:    "Dashboard: https://dashboard.example.com/projects/shop/fleetstages/prod-with-a-long-name",
			width: 40,
			want:  "Dashboard:\n  https://dashboard.example.com/projects/shop/fleetstages/prod-with-a-long-name",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := FitLines(tt.in, tt.width)
			require.Equal(t, tt.want, got)
			if tt.width > 0 {
				for _, line := range strings.Split(got, "\n") {
					if strings.Contains(line, " ") && !strings.Contains(line, "://") {
						require.LessOrEqual(t, visibleLen(line), tt.width, line)
					}
				}
			}
		})
	}
}
