#!/usr/bin/env bash
# Provides kube-apiserver and etcd for envtest in a project-local cache.
#
# First choice: envtest's prebuilt binaries, fetched by controller-runtime's
# setup-envtest (itself built from the Go module proxy) from its release
# index, within ENVTEST_TIMEOUT seconds: a download of seconds where a build
# takes many minutes. When that fails (no index reachable, no archive for
# this version or platform, a wrong version inside, the timeout), the
# binaries are built from source fetched through the Go module proxy only.
#
# Usage: hack/build-control-plane.sh [DEST]   (default bin/k8s/<k8s version>)
# Prints the directory holding the binaries. A second run is a no-op.
#
# Environment:
#   K8S_VERSION, ETCD_VERSION   what to provide (etcd's version applies to a build)
#   CONTROL_PLANE_SOURCE        auto (default: prebuilt, else build), envtest
#                               (prebuilt only, fail otherwise) or build
#   ENVTEST_TIMEOUT             seconds allowed for the prebuilt download (60)
#   ENVTEST_INDEX               setup-envtest's --index (default: its own)
#   ENVTEST_STORE               setup-envtest's --bin-dir (bin/setup-envtest)
#   TOOLS_DIR                   where setup-envtest is built (bin/tools)
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-v1.37.1}"
ETCD_VERSION="${ETCD_VERSION:-v3.6.16}"
SETUP_ENVTEST_VERSION="${SETUP_ENVTEST_VERSION:-v0.25.1}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="${1:-${root}/bin/k8s/${K8S_VERSION}}"
stamp="${dest}/.stamp"
source_choice="${CONTROL_PLANE_SOURCE:-auto}"
envtest_timeout="${ENVTEST_TIMEOUT:-60}"
store="${ENVTEST_STORE:-${root}/bin/setup-envtest}"
tools="${TOOLS_DIR:-${root}/bin/tools}"

log() { echo "build-control-plane: $*" >&2; }

case "${source_choice}" in
  auto|envtest|build) ;;
  *) log "CONTROL_PLANE_SOURCE=${source_choice}: use auto, envtest or build"; exit 2 ;;
esac

# A stamp names the Kubernetes version first, then etcd's and where they
# came from; either source satisfies a later run.
if [[ -f "${stamp}" && "$(cut -d' ' -f1 "${stamp}")" == "kube-apiserver=${K8S_VERSION}" &&
      -x "${dest}/kube-apiserver" && -x "${dest}/etcd" ]]; then
  echo "${dest}"
  exit 0
fi

export GOTOOLCHAIN=local GOFLAGS=-mod=mod CGO_ENABLED=0
mkdir -p "${dest}"
work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT

# bounded runs a command for at most $1 seconds where timeout(1) exists.
bounded() {
  local secs="$1"; shift
  if command -v timeout >/dev/null 2>&1; then timeout --kill-after=5 "${secs}" "$@"; else "$@"; fi
}

# fetch_prebuilt installs envtest's prebuilt binaries into dest, or fails.
fetch_prebuilt() {
  local bin="${tools}/setup-envtest-${SETUP_ENVTEST_VERSION}"
  if [[ ! -x "${bin}" ]]; then
    log "building setup-envtest ${SETUP_ENVTEST_VERSION}"
    mkdir -p "${tools}"
    if ! GOBIN="${work}/gobin" bounded 300 go install \
        "sigs.k8s.io/controller-runtime/tools/setup-envtest@${SETUP_ENVTEST_VERSION}" >&2; then
      log "could not build setup-envtest"
      return 1
    fi
    mv "${work}/gobin/setup-envtest" "${bin}"
  fi
  local args=(use -p path --bin-dir "${store}")
  if [[ -n "${ENVTEST_INDEX:-}" ]]; then args+=(--index "${ENVTEST_INDEX}"); fi
  log "fetching envtest's prebuilt kube-apiserver and etcd ${K8S_VERSION} (at most ${envtest_timeout}s)"
  local path
  if ! path="$(bounded "${envtest_timeout}" "${bin}" "${args[@]}" "${K8S_VERSION#v}")" || [[ -z "${path}" ]]; then
    log "no prebuilt binaries for ${K8S_VERSION} within ${envtest_timeout}s"
    return 1
  fi
  if [[ ! -x "${path}/kube-apiserver" || ! -x "${path}/etcd" ]]; then
    log "the prebuilt archive in ${path} lacks kube-apiserver or etcd"
    return 1
  fi
  local got
  got="$("${path}/kube-apiserver" --version 2>/dev/null || true)"
  if [[ "${got}" != "Kubernetes ${K8S_VERSION}" ]]; then
    log "the prebuilt kube-apiserver reports '${got}', not Kubernetes ${K8S_VERSION}"
    return 1
  fi
  cp "${path}/kube-apiserver" "${path}/etcd" "${dest}/"
  if [[ -x "${path}/kubectl" ]]; then cp "${path}/kubectl" "${dest}/"; fi
  echo "kube-apiserver=${K8S_VERSION} etcd=envtest source=setup-envtest" > "${stamp}"
  log "installed envtest's prebuilt binaries"
}

if [[ "${source_choice}" != build ]]; then
  if fetch_prebuilt; then
    echo "${dest}"
    exit 0
  fi
  if [[ "${source_choice}" == envtest ]]; then
    log "CONTROL_PLANE_SOURCE=envtest: not building"
    exit 1
  fi
  log "falling back to building from the Go module proxy"
fi

# etcd: its server module has replace directives, so `go install` refuses it;
# a throw-away module that requires it builds fine.
log "building etcd ${ETCD_VERSION}"
mkdir -p "${work}/etcd"
(
  cd "${work}/etcd"
  go mod init kargo-fleet.local/etcd >/dev/null 2>&1
  go get -tool "go.etcd.io/etcd/server/v3@${ETCD_VERSION}" >/dev/null 2>&1
  go build -trimpath -ldflags '-s -w' -o "${dest}/etcd" go.etcd.io/etcd/server/v3
)

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

echo "kube-apiserver=${K8S_VERSION} etcd=${ETCD_VERSION} source=build" > "${stamp}"
echo "${dest}"
