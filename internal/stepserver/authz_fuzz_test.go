package stepserver

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kargo-fleet/kargo-fleet/internal/steptoken"
)

// FuzzBearerToken parses arbitrary Authorization headers: nothing panics, a
// token is only found behind a case-insensitive "Bearer " and never carries
// surrounding spaces, and only a token the key issued for the Project
// verifies.
func FuzzBearerToken(f *testing.F) {
	issued := time.Unix(1777636800, 0)
	good := steptoken.Issue(testKey, testProject, issued)
	keys := steptoken.KeySet{Current: testKey}
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
			_, ok := steptoken.Verify(keys, project, tok)
			require.False(t, ok, "an empty token never verifies")
			return
		}
		v := strings.TrimSpace(h.Get("Authorization"))
		require.True(t, strings.EqualFold(v[:len("Bearer ")], "Bearer "))
		require.Equal(t, strings.TrimSpace(tok), tok)
		at, ok := steptoken.Verify(keys, project, tok)
		require.Equal(t, tok == steptoken.Issue(testKey, project, at), ok)
	})
}
