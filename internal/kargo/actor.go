package kargo

import "strings"

// UnknownActor is the create-actor Kargo writes when it cannot tell who
// created an object.
const UnknownActor = "unknown actor"

// PromotionActor returns the actor Kargo v1.11.2 hands a Promotion's steps,
// from the Promotion's create-actor: the value without its "<kind>:" prefix
// when it holds exactly one colon ("kubernetes:alice" is "alice",
// "email:bob@example.com" is "bob@example.com"), the whole value when it
// holds more ("kubernetes:system:serviceaccount:ns:sa" stays as it is),
// and "" for none or UnknownActor. Kargo's argocd-update step starts its
// sync as this actor (Kargo's controller when it is ""), so an
// Application's sync initiator is compared with it, never with the raw
// annotation.
func PromotionActor(createActor string) string {
	actor := createActor
	if actor == UnknownActor {
		actor = ""
	}
	if parts := strings.Split(createActor, ":"); len(parts) == 2 {
		actor = parts[1]
	}
	return actor
}

// Actor prefixes Kargo v1.11.2 writes into create-actor annotations, abort
// requests and Events (api/v1alpha1/event.go there). An OIDC user whose
// token carries the configured username claim is "<claim>:<username>".
const (
	// AdminActor is Kargo's built-in admin account.
	AdminActor = "admin"
	// ActorControllerPrefix prefixes one of Kargo's own controllers.
	ActorControllerPrefix = "controller:"
	// ActorEmailPrefix prefixes an OIDC user known by the email claim.
	ActorEmailPrefix = "email:"
	// ActorSubjectPrefix prefixes an OIDC user known by the sub claim.
	ActorSubjectPrefix = "subject:"
)

// ActorKind says what kind of identity an actor names.
type ActorKind string

// Kinds of actors.
const (
	// ActorUnknown: Kargo could not tell who acted (a Kubernetes token
	// given to Kargo's API server carries no name it records).
	ActorUnknown ActorKind = "Unknown"
	// ActorAdmin: Kargo's built-in admin account.
	ActorAdmin ActorKind = "Admin"
	// ActorKargoController: one of Kargo's controllers.
	ActorKargoController ActorKind = "KargoController"
	// ActorKubernetesUser: a Kubernetes user, as Kargo's webhook recorded
	// the admission request's user.
	ActorKubernetesUser ActorKind = "KubernetesUser"
	// ActorOIDCClaim: a person Kargo's API server authenticated with its
	// OIDC provider, known by one claim of their token.
	ActorOIDCClaim ActorKind = "OIDCClaim"
)

// Actor is an actor string read back: who it names, and how.
type Actor struct {
	Kind ActorKind
	// Name is the Kubernetes user name (ActorKubernetesUser), the
	// controller's name (ActorKargoController) or the claim's value
	// (ActorOIDCClaim).
	Name string
	// Claim is the OIDC claim Name is the value of ("email", "sub" or the
	// API server's username claim); ActorOIDCClaim only.
	Claim string
}

// ParseActor reads an actor string the way Kargo writes it: "admin",
// "kubernetes:<user>", "controller:<name>", "email:<email>",
// "subject:<sub>", "<usernameClaim>:<username>", or "unknown actor". A
// value with no prefix, an empty name or an empty claim is ActorUnknown:
// whoever it names cannot be looked up.
func ParseActor(actor string) Actor {
	switch {
	case actor == AdminActor:
		return Actor{Kind: ActorAdmin}
	case strings.HasPrefix(actor, ActorKubernetesPrefix):
		return named(ActorKubernetesUser, strings.TrimPrefix(actor, ActorKubernetesPrefix), "")
	case strings.HasPrefix(actor, ActorControllerPrefix):
		return named(ActorKargoController, strings.TrimPrefix(actor, ActorControllerPrefix), "")
	case strings.HasPrefix(actor, ActorEmailPrefix):
		return named(ActorOIDCClaim, strings.TrimPrefix(actor, ActorEmailPrefix), "email")
	case strings.HasPrefix(actor, ActorSubjectPrefix):
		return named(ActorOIDCClaim, strings.TrimPrefix(actor, ActorSubjectPrefix), "sub")
	}
	claim, name, ok := strings.Cut(actor, ":")
	if !ok || strings.ContainsAny(claim, " \t") {
		return Actor{Kind: ActorUnknown}
	}
	return named(ActorOIDCClaim, name, claim)
}

func named(kind ActorKind, name, claim string) Actor {
	if name == "" || (kind == ActorOIDCClaim && claim == "") {
		return Actor{Kind: ActorUnknown}
	}
	return Actor{Kind: kind, Name: name, Claim: claim}
}
