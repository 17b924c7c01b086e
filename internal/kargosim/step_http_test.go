package kargosim

import (
	"context"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// TestHTTPStepTLS: like Kargo's, the http step verifies a server's
// certificate against the roots it trusts and skips that only when its
// config says insecureSkipTLSVerify.
func TestHTTPStepTLS(t *testing.T) {
	t.Parallel()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"state":"done"}`))
	}))
	t.Cleanup(srv.Close)
	trusting := srv.Client().Transport // trusts the server's CA, as a mounted CA would
	cfg := func(skip bool) map[string]any {
		return map[string]any{"url": srv.URL, "insecureSkipTLSVerify": skip, "successExpression": "response.status == 200"}
	}
	for _, tt := range []struct {
		name      string
		transport http.RoundTripper
		skip      bool
		want      string
	}{
		{name: "an unknown CA fails", want: kargo.StepErrored},
		{name: "a trusted CA verifies", transport: trusting, want: kargo.StepSucceeded},
		{name: "insecureSkipTLSVerify skips verification", skip: true, want: kargo.StepSucceeded},
		{name: "insecureSkipTLSVerify with a configured transport", transport: trusting, skip: true, want: kargo.StepSucceeded},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := (&httpStep{transport: tt.transport}).run(context.Background(), &stepContext{config: cfg(tt.skip)})
			require.Equal(t, tt.want, res.status, "%v", res.err)
			if tt.want == kargo.StepErrored {
				var unknown x509.UnknownAuthorityError
				require.ErrorAs(t, res.err, &unknown)
			}
		})
	}
}
