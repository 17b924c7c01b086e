package strutil

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

func TestTruncate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in string
		n        int
		want     string
	}{
		{name: "short", in: "abc", n: 5, want: "abc"},
		{name: "exact", in: "abc", n: 3, want: "abc"},
		{name: "cut", in: "abcdef", n: 4, want: "abcd"},
		{name: "inside a rune", in: "aé", n: 2, want: "a"},
		{name: "zero", in: "abc", n: 0, want: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, Truncate(tc.in, tc.n))
		})
	}
}

func TestEllipsis(t *testing.T) {
	t.Parallel()
	require.Equal(t, "abc", Ellipsis("abc", 3))
	require.Equal(t, "ab...", Ellipsis("abcdefgh", 5))
	require.Equal(t, "a...", Ellipsis("aéééé", 5), "never cuts inside a rune")
	require.Equal(t, "ab", Ellipsis("abcdef", 2))
}

func TestEllipsisRunes(t *testing.T) {
	t.Parallel()
	require.Equal(t, "ééé", EllipsisRunes("ééé", 3))
	require.Equal(t, "éé…", EllipsisRunes("éééé", 3))
	require.Equal(t, "", EllipsisRunes("abc", 0))
}

func FuzzTruncate(f *testing.F) {
	f.Add("héllo wörld", 4)
	f.Fuzz(func(t *testing.T, s string, n int) {
		if n < 0 || n > 1<<16 {
			return
		}
		for _, got := range []string{Truncate(s, n), Ellipsis(s, n)} {
			if len(got) > n {
				t.Fatalf("%q is longer than %d bytes", got, n)
			}
			if utf8.ValidString(s) && !utf8.ValidString(got) {
				t.Fatalf("%q is not valid UTF-8", got)
			}
		}
	})
}

func TestSample(t *testing.T) {
	t.Parallel()
	require.Equal(t, "a, b", Sample([]string{"a", "b"}, 2))
	require.Equal(t, "a, b and 2 more", Sample([]string{"a", "b", "c", "d"}, 2))
}

func TestQuote(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in, want string
		n              int
	}{
		{name: "short", in: "eu-west", n: 67, want: `"eu-west"`},
		{name: "empty", in: "", n: 67, want: `""`},
		{name: "exact", in: strings.Repeat("a", 65), n: 67, want: strconv.Quote(strings.Repeat("a", 65))},
		{name: "cut", in: strings.Repeat("a", 100), n: 67, want: `"` + strings.Repeat("a", 65) + `"...`},
		{name: "escapes are not split", in: strings.Repeat("\x00", 100), n: 67, want: `"` + strings.Repeat(`\x00`, 16) + `"...`},
		{name: "characters are not split", in: strings.Repeat("é", 100), n: 67, want: `"` + strings.Repeat("é", 32) + `"...`},
		{name: "invalid UTF-8", in: "a\xffb", n: 67, want: `"a\xffb"`},
		{name: "no room", in: "abc", n: 0, want: `""...`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := Quote(tc.in, tc.n)
			require.Equal(t, tc.want, got)
			require.LessOrEqual(t, len(got), max(tc.n, 2)+3)
			unquoted, err := strconv.Unquote(strings.TrimSuffix(got, "..."))
			require.NoError(t, err)
			require.True(t, strings.HasPrefix(tc.in, unquoted))
		})
	}
}
