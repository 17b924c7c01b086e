// Package steptoken is the lifecycle of step tokens, the bearer tokens with
// which Kargo's http steps call the step server.
//
// A token is "v2.<issued unix seconds>.<mac>": an HMAC-SHA256 of the
// Project's name and the issue time under a signing key only the controller
// holds (Issue). It is worth nothing in another Project or after TTL, and
// checking it needs no per-Project state (Check, Verify): the signature, the
// age, and a revocation annotation on the Project namespace (RevocationOf).
//
// The signing keys come from a KeySource: a file, or a Secret of the
// controller's namespace created with a random key when missing (SecretKey);
// during a rotation the previous key still verifies the tokens it signed.
// The Minter, a reconciler on the leader, keeps one token Secret in every
// Project that has a FleetStage and re-mints it when it ages, when the key
// rotates, when it is edited or deleted, and after a revocation.
package steptoken
