package stepserver

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kargo-fleet/kargo-fleet/internal/jsonkeys"
	"github.com/kargo-fleet/kargo-fleet/steps"
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
	s := New(Options{MaxBodyBytes: 4096}, Deps{})
	f.Fuzz(func(t *testing.T, body string) {
		r := httptest.NewRequest(http.MethodPost, PathPrefix+steps.WaveStepName, strings.NewReader(body))
		req, err := s.decode(httptest.NewRecorder(), r)
		if err != nil {
			var ref *refusal
			require.True(t, errors.As(err, &ref), "every error is a refusal: %v", err)
			require.GreaterOrEqual(t, ref.status, 400)
			require.Less(t, ref.status, 500)
			return
		}
		require.NoError(t, req.Validate())
		require.NoError(t, jsonkeys.Check([]byte(body), requestKeys...))
	})
}
