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
