package kargo

import "testing"

func TestPromotionActor(t *testing.T) {
	t.Parallel()
	for createActor, want := range map[string]string{
		"":                                       "",
		UnknownActor:                             "",
		"admin":                                  "admin",
		"kubernetes:alice":                       "alice",
		"email:bob@example.com":                  "bob@example.com",
		"subject:1234":                           "1234",
		"kubernetes:system:serviceaccount:ns:sa": "kubernetes:system:serviceaccount:ns:sa",
		"kubernetes:system:admin":                "kubernetes:system:admin",
		"kubernetes:":                            "",
	} {
		if got := PromotionActor(createActor); got != want {
			t.Errorf("PromotionActor(%q) = %q, want %q", createActor, got, want)
		}
	}
}
