#!/usr/bin/env bash
# Builds kube-apiserver and etcd for envtest from the Go module proxy into a
# project-local cache. Nothing is downloaded from anywhere but the module proxy.
#
# Usage: hack/build-control-plane.sh [DEST]   (default bin/k8s/<k8s version>)
# Prints the directory holding the binaries. A second run is a no-op.
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-v1.37.1}"
ETCD_VERSION="${ETCD_VERSION:-v3.6.16}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="${1:-${root}/bin/k8s/${K8S_VERSION}}"
stamp="${dest}/.stamp"
want="kube-apiserver=${K8S_VERSION} etcd=${ETCD_VERSION}"

if [[ -f "${stamp}" && "$(cat "${stamp}")" == "${want}" && -x "${dest}/kube-apiserver" && -x "${dest}/etcd" ]]; then
  echo "${dest}"
  exit 0
fi

export GOTOOLCHAIN=local GOFLAGS=-mod=mod CGO_ENABLED=0
mkdir -p "${dest}"
work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT

log() { echo "build-control-plane: $*" >&2; }

# etcd: its server module has replace directives, so `go install` refuses it;
# a throw-away module that requires it builds fine.
if [[ ! -x "${dest}/etcd" || ! -f "${stamp}" || "$(cat "${stamp}")" != "${want}" ]]; then
  log "building etcd ${ETCD_VERSION}"
  mkdir -p "${work}/etcd"
  (
    cd "${work}/etcd"
    go mod init kargo-fleet.local/etcd >/dev/null 2>&1
    go get -tool "go.etcd.io/etcd/server/v3@${ETCD_VERSION}" >/dev/null 2>&1
    go build -trimpath -ldflags '-s -w' -o "${dest}/etcd" go.etcd.io/etcd/server/v3
  )
fi

# kube-apiserver: k8s.io/kubernetes points its staging modules at ./staging;
# replace each with the published module of the matching v0 version.
log "building kube-apiserver ${K8S_VERSION}"
mkdir -p "${work}/apiserver"
(
  cd "${work}/apiserver"
  go mod init kargo-fleet.local/apiserver >/dev/null 2>&1
  staging_version="v0.${K8S_VERSION#v1.}"
  gomod="$(go mod download -json "k8s.io/kubernetes@${K8S_VERSION}" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')"
  {
    echo "require k8s.io/kubernetes ${K8S_VERSION}"
    grep -E '^[[:space:]]*k8s.io/[^ ]+ => ./staging/' "${gomod}" | awk -v v="${staging_version}" '{print "replace " $1 " => " $1 " " v}'
  } >> go.mod
  go get -tool "k8s.io/kubernetes/cmd/kube-apiserver@${K8S_VERSION}" >/dev/null 2>&1
  major="${K8S_VERSION#v}"; major="${major%%.*}"
  minor="${K8S_VERSION#v*.}"; minor="${minor%%.*}"
  ldflags="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X ${pkg}.gitVersion=${K8S_VERSION} -X ${pkg}.gitMajor=${major} -X ${pkg}.gitMinor=${minor}"
  done
  go build -trimpath -ldflags "${ldflags}" -o "${dest}/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver
)

echo "${want}" > "${stamp}"
echo "${dest}"
