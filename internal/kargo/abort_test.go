package kargo

import "testing"

func TestAbortRequestOf(t *testing.T) {
	t.Parallel()
	cases := []struct {
		value string
		want  *AbortRequest
	}{
		{"terminate", &AbortRequest{Action: "terminate"}},
		{`{"action":"terminate","actor":"email:alice@example.com","controlPlane":true}`,
			&AbortRequest{Action: "terminate", Actor: "email:alice@example.com", ControlPlane: true}},
		{`{"actor":"kubernetes:bob"}`, nil},
		{"", nil},
		{`{"action":`, &AbortRequest{Action: `{"action":`}},
	}
	for _, tc := range cases {
		got, ok := AbortRequestOf(map[string]string{AbortAnnotation: tc.value})
		if (tc.want == nil) != !ok || (ok && *got != *tc.want) {
			t.Errorf("AbortRequestOf(%q) = %+v, %v; want %+v", tc.value, got, ok, tc.want)
		}
	}
	if _, ok := AbortRequestOf(nil); ok {
		t.Error("no annotation read as a request")
	}
	r := &AbortRequest{Action: "terminate", Actor: "admin"}
	if back, ok := AbortRequestOf(map[string]string{AbortAnnotation: r.String()}); !ok || *back != *r {
		t.Errorf("round trip: %+v", back)
	}
}
