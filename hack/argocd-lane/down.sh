#!/usr/bin/env bash
# down.sh: stops every process of the real Argo CD lane by its PID file
# ($LANE_DIR/run/*.pid; LANE_DIR default /tmp/kargo-fleet-argocd-lane):
# kargo-fleet, Argo CD and Kargo first, the destination clusters' kwok,
# kube-controller-manager and kube-scheduler next, the git daemon and Redis,
# then the kube-apiservers and etcd last. Data stays; up.sh --fresh wipes it.
L=${LANE_DIR:-/tmp/kargo-fleet-argocd-lane}
cd "$L" 2>/dev/null || { echo "no lane in $L"; exit 0; }
stop() {
  local f=run/$1.pid p
  [ -f "$f" ] || return 0
  p=$(cat "$f")
  # Only the process up.sh started (its HOME is run/NAME.home, or it
  # started when run/NAME.start says: Redis overwrites its environment with
  # its process title): a PID file left by a lane that died may name another
  # process since.
  local s; s=$(cat "run/$1.start" 2>/dev/null)
  if ! tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null | grep -qx "HOME=$L/run/$1.home" &&
    ! { [ -n "$s" ] && [ "$(sed 's/^.*) //' "/proc/$p/stat" 2>/dev/null | cut -d' ' -f20)" = "$s" ]; }; then
    rm -f "$f" "run/$1.start"
    return 0
  fi
  if kill "$p" 2>/dev/null; then
    for _ in $(seq 1 40); do kill -0 "$p" 2>/dev/null || break; sleep 0.25; done
    kill -0 "$p" 2>/dev/null && kill -9 "$p" 2>/dev/null
    echo "stopped $1 ($p)"
  fi
  rm -f "$f" "run/$1.start"
}
order=(kargo-fleet argocd-applicationset-controller argocd-application-controller argocd-repo-server
  kargo-controller kargo-api kargo-management-controller kargo-webhooks-server)
for c in d1 d2 d3 d4; do order+=("$c-kube-scheduler" "$c-kube-controller-manager" "$c-kwok"); done
order+=(git-daemon redis)
for c in d4 d3 d2 d1 hub; do order+=("$c-apiserver"); done
for c in d4 d3 d2 d1 hub; do order+=("$c-etcd"); done
for n in "${order[@]}"; do stop "$n"; done
# Anything else a PID file names (a process a later version of up.sh added).
for f in run/*.pid; do [ -e "$f" ] && stop "$(basename "$f" .pid)"; done
# The repo server's git signature checks start a gpg-agent of their own.
if [ -d run/argocd-repo-server/app-config/gpg/keys ] && command -v gpgconf >/dev/null; then
  gpgconf --homedir "$L/run/argocd-repo-server/app-config/gpg/keys" --kill gpg-agent 2>/dev/null && echo "stopped the repo server's gpg-agent"
fi
exit 0
