// Package envtest starts a real kube-apiserver and etcd (built from the Go
// module proxy by hack/build-control-plane.sh) for integration tests, installs
// kargo-fleet's CRDs and Kargo's, and hands tests a client.
//
// Kargo's real CRDs are used when present: $KARGO_CRDS, else
// ../shared/kargo/v1.11.2/crds beside the repository (plus Target from
// ../shared/kargo/main/crds). Otherwise the permissive CRDs generated from
// kargo-fleet's own mirror (internal/kargo/crds) stand in.
package envtest
