// Package kargoclient holds what kargo-fleet writes to Kargo's objects
// through the API server, such as asking Kargo to run a polling step again
// at once (RefreshPromotion).
//
// It is kept apart from package kargo, the typed mirror of Kargo's API: the
// pure packages that read Kargo's types (rendering, rollout decisions, drift)
// then link no Kubernetes client.
package kargoclient
