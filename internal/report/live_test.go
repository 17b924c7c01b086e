package report

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLive_Draw(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		tty    bool
		frames []string
		forget bool
		want   string
	}{
		{
			name:   "appends snapshots elsewhere",
			frames: []string{"a\nb\n", "c"},
			want:   "a\nb\n\nc\n\n",
		},
		{
			name:   "redraws in place on a terminal",
			tty:    true,
			frames: []string{"a\nb\n", "c\n"},
			want:   "\x1b[Ja\x1b[K\nb\x1b[K\n" + "\x1b[2A\r\x1b[Jc\x1b[K\n",
		},
		{
			name:   "after Forget the next frame starts below",
			tty:    true,
			frames: []string{"a\n", "b\n"},
			forget: true,
			want:   "\x1b[Ja\x1b[K\n" + "\x1b[Jb\x1b[K\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var b bytes.Buffer
			l := NewLive(&b, tt.tty)
			for i, f := range tt.frames {
				require.NoError(t, l.Draw(f))
				if tt.forget && i == 0 {
					l.Forget()
				}
			}
			require.Equal(t, tt.want, b.String())
		})
	}
}

func TestIsTerminal(t *testing.T) {
	t.Parallel()
	require.False(t, IsTerminal(&bytes.Buffer{}))
}

func TestCutVisible(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		in    string
		width int
		want  string
	}{
		{name: "short lines stay", in: "abc", width: 5, want: "abc"},
		{name: "long lines are cut", in: "abcdef", width: 3, want: "abc"},
		{name: "runes count once", in: "██····", width: 3, want: "██·"},
		{name: "colours take no room", in: "\x1b[32m██\x1b[0m··", width: 3, want: "\x1b[32m██\x1b[0m·\x1b[0m"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, cutVisible(tt.in, tt.width))
		})
	}
}

func TestLive_width(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	require.NoError(t, NewLive(&b, true).WithWidth(4).Draw("abcdef\nxy"))
	require.Equal(t, "\x1b[Jabcd\x1b[K\nxy\x1b[K\n", b.String())
}
