// Package webhookcert gives the FleetStage webhook a serving certificate
// when neither cert-manager nor the operator provides one: the controller
// keeps a self-signed CA and a serving certificate in a Secret of its
// namespace, writes them to the webhook server's certificate folder, writes
// the CA into the ValidatingWebhookConfiguration's caBundle, and renews the
// serving certificate (and, years later, the CA) before it expires.
//
// Every replica runs it, because every replica serves the webhook. The first
// replica to find the Secret missing or due creates or renews it; the others
// read what it wrote (an optimistic-concurrency conflict means "someone else
// did it, read again"). The CA outlives the serving certificate, so renewing
// the serving certificate leaves the caBundle unchanged; a renewed CA is
// added to the bundle next to the old one until the old one expires, so no
// replica serving the previous certificate is refused in between.
package webhookcert
