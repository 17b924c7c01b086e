package steps

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzBearerToken parses arbitrary Authorization headers: nothing panics, a
// token is only found behind a case-insensitive "Bearer " and never carries
// surrounding spaces, and only the Project's own derived token verifies.
func FuzzBearerToken(f *testing.F) {
	good := DeriveToken(testKey, testProject)
	for _, h := range []string{
		"Bearer " + good, "bearer " + good, "BEARER   " + good + "  ", "Bearer", "Bearer ", "Basic abc",
		"Bearer a b", "Bearer\t" + good, "Bearer " + good + "\x00", "Bearer " + strings.ToUpper(good), "",
	} {
		f.Add(h, testProject)
	}
	f.Add("Bearer "+good, "other")
	f.Fuzz(func(t *testing.T, header, project string) {
		h := http.Header{}
		h.Set("Authorization", header)
		tok := bearerToken(h)
		if tok == "" {
			require.False(t, verifyToken(testKey, project, tok), "an empty token never verifies")
			return
		}
		v := strings.TrimSpace(h.Get("Authorization"))
		require.True(t, strings.EqualFold(v[:len("Bearer ")], "Bearer "))
		require.Equal(t, strings.TrimSpace(tok), tok)
		require.Equal(t, tok == DeriveToken(testKey, project), verifyToken(testKey, project, tok))
	})
}
