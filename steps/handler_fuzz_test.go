package steps

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzDecodeRequest sends arbitrary bodies to the step request decoder:
// nothing panics, a refusal is a 4xx, and an accepted request is valid and
// unambiguous (no duplicate or case-folded keys).
func FuzzDecodeRequest(f *testing.F) {
	f.Add(`{"project":"shop","stage":"prod-canary","promotion":"p","freight":"abc","alias":"wave::start","config":{"mode":"start"}}`)
	f.Add(`{"project":"shop","project":"other","stage":"s","promotion":"p","freight":"f","alias":"a"}`)
	f.Add(`{"Project":"shop","stage":"s","promotion":"p","freight":"f","alias":"a"}`)
	f.Add(`{"project":"shop","stage":"s","promotion":"p","freight":"f","alias":"a","config":{"mode":"a","MODE":"b"}}`)
	f.Add(`{"project":"shop","stage":"s","promotion":"p","freight":"f","alias":"a","config":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}`)
	f.Add(`{"project":"../x"}`)
	f.Add(`{"project":"shop"}{}`)
	f.Add(`{"pro\u006aect":"shop","stage":"s","promotion":"p","freight":"f","alias":"a"}`)
	f.Add(`{"project":"shop","stage":"s","promotion":"p","freight":"f","alias":"a","\u212aey":1}`)
	f.Add(`null`)
	f.Add(``)
	s := NewServer(ServerOptions{MaxBodyBytes: 4096}, ServerDeps{})
	f.Fuzz(func(t *testing.T, body string) {
		r := httptest.NewRequest(http.MethodPost, StepPathPrefix+WaveStepName, strings.NewReader(body))
		req, err := s.decode(httptest.NewRecorder(), r)
		if err != nil {
			var ref *refusal
			require.True(t, errors.As(err, &ref), "every error is a refusal: %v", err)
			require.GreaterOrEqual(t, ref.status, 400)
			require.Less(t, ref.status, 500)
			return
		}
		require.NoError(t, req.Validate())
		require.NoError(t, checkJSONKeys([]byte(body), requestKeys...))
	})
}

// FuzzCheckJSONKeys: the key check never panics, and a document it accepts
// has no object with two keys equal but for case.
func FuzzCheckJSONKeys(f *testing.F) {
	f.Add(`{"a":1,"b":{"c":[{"d":1,"D":2}]}}`)
	f.Add(`{"a":1,"a":2}`)
	f.Add(`[{"x":{"y":{"z":1}}}]`)
	f.Add(`{"\u017f":1,"S":2}`)
	f.Fuzz(func(t *testing.T, doc string) {
		_ = checkJSONKeys([]byte(doc), "a", "b")
	})
}
