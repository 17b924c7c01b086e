package kargo

import (
	"reflect"
	"testing"
)

func TestServiceAccountClaims(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name        string
		annotations map[string]string
		want        map[string][]string
		wantErr     bool
	}{
		{name: "none", annotations: nil, want: map[string][]string{}},
		{
			name:        "list and string",
			annotations: map[string]string{OIDCClaimsAnnotation: `{"groups": ["ops", "dev", "ops"], "email": "a@example.com"}`},
			want:        map[string][]string{"groups": {"dev", "ops"}, "email": {"a@example.com"}},
		},
		{
			name: "older form merged with the newer",
			annotations: map[string]string{
				OIDCClaimsAnnotation:                `{"email": ["a@example.com"]}`,
				OIDCClaimAnnotationPrefix + "email": "b@example.com, a@example.com",
				OIDCClaimAnnotationPrefix + "sub":   "42",
				"unrelated":                         "x",
			},
			want: map[string][]string{"email": {"a@example.com", "b@example.com"}, "sub": {"42"}},
		},
		{name: "not an object", annotations: map[string]string{OIDCClaimsAnnotation: `["a"]`}, wantErr: true},
		{name: "a number", annotations: map[string]string{OIDCClaimsAnnotation: `{"email": 3}`}, wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := ServiceAccountClaims(tc.annotations)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error = %v, want error %v", err, tc.wantErr)
			}
			if !tc.wantErr && !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestMapsActor(t *testing.T) {
	t.Parallel()
	sa := map[string]string{OIDCClaimsAnnotation: `{"email": ["alice@example.com"], "groups": "ops"}`}
	cases := []struct {
		actor string
		want  bool
	}{
		{"email:alice@example.com", true},
		{"email:mallory@example.com", false},
		{"subject:alice@example.com", false},    // the value under another claim maps nobody
		{"groups:ops", true},                    // a username claim named like the mapped one
		{"kubernetes:alice@example.com", false}, // a Kubernetes user is checked as itself
		{"admin", false},
		{UnknownActor, false},
	}
	for _, tc := range cases {
		if got := MapsActor(sa, ParseActor(tc.actor)); got != tc.want {
			t.Errorf("MapsActor(%q) = %v, want %v", tc.actor, got, tc.want)
		}
	}
	if MapsActor(map[string]string{OIDCClaimsAnnotation: "{"}, ParseActor("email:alice@example.com")) {
		t.Error("a malformed annotation mapped someone")
	}
}

func FuzzServiceAccountClaims(f *testing.F) {
	f.Add(`{"email": ["a@example.com"], "groups": "ops"}`, "a, b")
	f.Add(`{"x": [1]}`, "")
	f.Fuzz(func(t *testing.T, json, older string) {
		claims, err := ServiceAccountClaims(map[string]string{OIDCClaimsAnnotation: json, OIDCClaimAnnotationPrefix + "email": older})
		if err != nil {
			return
		}
		for name, values := range claims {
			for i := 1; i < len(values); i++ {
				if values[i-1] >= values[i] {
					t.Fatalf("claim %q values not sorted and unique: %q", name, values)
				}
			}
		}
	})
}
