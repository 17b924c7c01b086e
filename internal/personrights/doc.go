// Package personrights answers whether the person behind a gesture in the
// Kargo UI holds a right, checked as that person and never as Kargo's API
// server.
//
// Kargo's API server acts for every Kargo UI and CLI user with its own
// ServiceAccount and records who asked as an actor string: the create-actor
// annotation of a Promotion, the actor of an abort request. Kargo's
// mutating webhook overwrites that string with the requesting user for
// every request that does not come from Kargo's control plane, so an actor
// on an admitted object is Kargo's authenticated record of the person. The
// person's rights are then looked up the way Kargo's API server looks them
// up:
//
//   - a Kubernetes user's own request (Kargo records it as
//     "kubernetes:<user>") is reviewed at admission as the requesting user,
//     groups included; later readers of the record rely on that check
//     (CheckedAtAdmission);
//   - a person logged in through Kargo's OIDC provider is known by one claim
//     (email, sub or the API server's username claim) and holds the rights
//     of every ServiceAccount whose rbac.kargo.akuity.io/claims annotation
//     lists that claim value, in the Project's namespace or a global
//     ServiceAccount namespace; each such ServiceAccount is reviewed;
//   - Kargo's built-in admin account holds every right in Kargo, and in the
//     fleet unless the operator says otherwise;
//   - an unknown actor, or one of Kargo's controllers, holds none.
package personrights
