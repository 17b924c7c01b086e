package mdshell

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBlocks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		md   string
		want []Block
	}{
		{
			name: "commands, comments and continuation lines under their heading",
			md: "# Install\n\ntext\n\n## helm install\n\n```sh\n# a comment line\nhelm install kargo-fleet charts/kargo-fleet \\\n" +
				"  --namespace kargo-fleet \\\n  --set image.repository=x   # trailing\n\nkubectl get pods\n```\n",
			want: []Block{{Heading: "helm install", Line: 7, Commands: []Command{
				{Line: 9, Text: "helm install kargo-fleet charts/kargo-fleet --namespace kargo-fleet --set image.repository=x   # trailing"},
				{Line: 13, Text: "kubectl get pods"},
			}}},
		},
		{
			name: "only shell blocks; a heading inside a block is not a heading",
			md: "## A\n```text\n# not a heading\nhelm nothing\n```\n```bash\n$ make image\n```\n~~~yaml\nkind: X\n~~~\n" +
				"````console\n```\nkargo-fleet status\n````\n",
			want: []Block{
				{Heading: "A", Line: 6, Commands: []Command{{Line: 7, Text: "make image"}}},
				{Heading: "A", Line: 12, Commands: []Command{{Line: 13, Text: "```"}, {Line: 14, Text: "kargo-fleet status"}}},
			},
		},
		{
			name: "an unclosed block keeps nothing",
			md:   "```sh\nmake demo\n",
		},
		{
			name: "a continuation at the end of a block still ends the command",
			md:   "```sh\nmake \\\n```\n",
			want: []Block{{Line: 1, Commands: []Command{{Line: 2, Text: "make"}}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, Blocks([]byte(tt.md)))
		})
	}
}

func FuzzBlocks(f *testing.F) {
	f.Add("```sh\nmake demo \\\n  -x\n```\n")
	f.Add("## h\n````bash\n```\n$ a\n````\n")
	f.Fuzz(func(t *testing.T, md string) {
		for _, b := range Blocks([]byte(md)) {
			for _, c := range b.Commands {
				if c.Line < b.Line || c.Text == "" {
					t.Fatalf("command %+v of block at line %d", c, b.Line)
				}
			}
		}
	})
}
