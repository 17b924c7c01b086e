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

func TestParseActor(t *testing.T) {
	t.Parallel()
	for actor, want := range map[string]Actor{
		"admin":                                  {Kind: ActorAdmin},
		"kubernetes:alice":                       {Kind: ActorKubernetesUser, Name: "alice"},
		"kubernetes:system:serviceaccount:ns:sa": {Kind: ActorKubernetesUser, Name: "system:serviceaccount:ns:sa"},
		"controller:kargo-controller":            {Kind: ActorKargoController, Name: "kargo-controller"},
		"email:bob@example.com":                  {Kind: ActorOIDCClaim, Name: "bob@example.com", Claim: "email"},
		"subject:1234":                           {Kind: ActorOIDCClaim, Name: "1234", Claim: "sub"},
		"preferred_username:carol":               {Kind: ActorOIDCClaim, Name: "carol", Claim: "preferred_username"},
		UnknownActor:                             {Kind: ActorUnknown},
		"":                                       {Kind: ActorUnknown},
		"kubernetes:":                            {Kind: ActorUnknown},
		"email:":                                 {Kind: ActorUnknown},
		":carol":                                 {Kind: ActorUnknown},
		"alice":                                  {Kind: ActorUnknown},
	} {
		if got := ParseActor(actor); got != want {
			t.Errorf("ParseActor(%q) = %+v, want %+v", actor, got, want)
		}
	}
}
