// Package manager builds kargo-fleet's controller-runtime manager: the
// scheme, the cache options (slim cached objects, no Secrets but Argo CD
// cluster Secrets) and every reconciler and server. The controller command,
// the local fleet environment behind the demo and the scale harness, and
// every integration suite build their manager with New, so tests run the
// controller as it is deployed.
package manager
