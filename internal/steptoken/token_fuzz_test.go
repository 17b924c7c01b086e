package steptoken

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
)

// FuzzRevocationOf: a Project namespace's revocation annotation revokes
// nothing when absent, the tokens issued before its time when it is an
// RFC 3339 time (and that time survives a round trip), and every token
// otherwise: a value it cannot read fails closed.
func FuzzRevocationOf(f *testing.F) {
	f.Add("2026-11-01T00:00:00Z", true, int64(1_790_000_000))
	f.Add(" 2026-11-01T00:00:00+02:00 ", true, int64(0))
	f.Add("2026-11-01T00:00:00.123456789Z", true, int64(1_793_491_200))
	f.Add("true", true, int64(5))
	f.Add("", true, int64(5))
	f.Add("", false, int64(5))
	f.Fuzz(func(t *testing.T, value string, present bool, issuedUnix int64) {
		annotations := map[string]string{"other": value}
		if present {
			annotations[fleetv1alpha1.StepTokenRevokedAnnotation] = value
		}
		r := RevocationOf(annotations)
		issued := time.Unix(issuedUnix, 0)
		switch {
		case !present:
			require.Equal(t, Revocation{}, r)
			require.False(t, r.Refuses(issued))
		case r.All:
			require.True(t, r.Before.IsZero())
			require.True(t, r.Refuses(issued), "an unreadable revocation refuses every token")
		default:
			parsed, err := time.Parse(time.RFC3339, strings.TrimSpace(value))
			require.NoError(t, err, "only a time revokes less than every token")
			require.True(t, parsed.Equal(r.Before))
			require.Equal(t, issued.Before(r.Before), r.Refuses(issued))
			again := RevocationOf(map[string]string{
				fleetv1alpha1.StepTokenRevokedAnnotation: r.Before.Format(time.RFC3339Nano)})
			require.False(t, again.All)
			require.True(t, again.Before.Equal(r.Before), "the time survives a round trip")
		}
	})
}

// FuzzParseKeyFile: a signing key file yields keys without surrounding
// space or line breaks, in the order written, or an error when it holds more
// than two keys; two keys written as documented come back unchanged.
func FuzzParseKeyFile(f *testing.F) {
	f.Add([]byte("0123456789abcdef0123456789abcdef\n"))
	f.Add([]byte("0123456789abcdef0123456789abcdef\r\nfedcba9876543210fedcba9876543210\r\n"))
	f.Add([]byte("\n\n  current  \n\n previous \n"))
	f.Add([]byte("a\nb\nc"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, raw []byte) {
		keys, err := parseKeyFile(raw)
		var lines [][]byte
		for _, l := range bytes.Split(raw, []byte("\n")) {
			if l = bytes.TrimSpace(l); len(l) > 0 {
				lines = append(lines, l)
			}
		}
		if err != nil {
			require.Greater(t, len(lines), 2, "only a third key is refused")
			return
		}
		require.LessOrEqual(t, len(lines), 2)
		for _, k := range [][]byte{keys.Current, keys.Previous} {
			require.Equal(t, bytes.TrimSpace(k), k)
			require.NotContains(t, string(k), "\n")
		}
		require.Equal(t, len(keys.Current) == 0, len(lines) == 0)
		require.Equal(t, len(keys.Previous) == 0, len(lines) < 2)
		if len(keys.Previous) > 0 {
			again, err := parseKeyFile([]byte(string(keys.Current) + "\n" + string(keys.Previous) + "\n"))
			require.NoError(t, err)
			require.Equal(t, keys, again, "keys written back read the same")
		}
	})
}

// FuzzVerify: a KeySet that validates verifies the tokens both of its keys
// issue, for their Project only, with their issue time; any token it
// accepts is exactly what one of its keys issues (one spelling per token).
func FuzzVerify(f *testing.F) {
	current := "0123456789abcdef0123456789abcdef"
	previous := "fedcba9876543210fedcba9876543210"
	f.Add([]byte(current), []byte(previous), "shop", "v2.1790000000.abc", int64(1_790_000_000))
	f.Add([]byte(current), []byte(nil), "shop", "v2.01790000000.abc", int64(0))
	f.Add([]byte("short"), []byte(previous), "p", "v1.1.x", int64(1))
	f.Add([]byte(current), []byte("short"), "p", "v2..", int64(-1))
	f.Fuzz(func(t *testing.T, cur, prev []byte, project, token string, issuedUnix int64) {
		keys := KeySet{Current: cur, Previous: prev}
		if keys.validate() != nil {
			require.True(t, len(cur) < MinSigningKeyBytes || (len(prev) > 0 && len(prev) < MinSigningKeyBytes))
			return
		}
		if issued, ok := Verify(keys, project, token); ok {
			canonical := []string{Issue(keys.Current, project, issued)}
			if len(keys.Previous) > 0 {
				canonical = append(canonical, Issue(keys.Previous, project, issued))
			}
			require.Contains(t, canonical, token, "an accepted token is what a key issues")
		}
		if issuedUnix < 0 || issuedUnix > 999_999_999_999 {
			return
		}
		at := time.Unix(issuedUnix, 0)
		signers := [][]byte{keys.Current}
		if len(keys.Previous) > 0 {
			signers = append(signers, keys.Previous)
		}
		for _, k := range signers {
			tok := Issue(k, project, at)
			got, ok := Verify(keys, project, tok)
			require.True(t, ok)
			require.True(t, at.Equal(got))
			_, ok = Verify(keys, project+"x", tok)
			require.False(t, ok, "a token is worth nothing in another Project")
		}
	})
}
