#!/usr/bin/env bash
# up.sh [--fresh]: brings up the real Argo CD lane of `make e2e-argocd` in
# $LANE_DIR (default /tmp/kargo-fleet-argocd-lane), every piece a process:
#
#   hub   kube-apiserver + etcd holding Kargo's CRDs and components
#         (controller with its Argo CD integration on, webhooks server,
#         management controller, API server with the admin account), Argo CD's
#         CRDs and control plane in namespace argocd (application controller,
#         repo server, ApplicationSet controller, Redis), and kargo-fleet's
#         CRDs, RBAC, ClusterPromotionTasks and controller (built from this
#         repository, run as its own ServiceAccount with the chart's RBAC and
#         the chart's Deployment flags).
#   d1-d4 destination clusters: kube-apiserver + etcd each, with kwok (one
#         fake node), kube-controller-manager and kube-scheduler, so that
#         Deployments roll out and become Available; each registered in the
#         hub's argocd namespace as an Argo CD cluster Secret labelled
#         region and tier.
#   git   a `git daemon` serving apps.git: one app (Deployment + ConfigMap)
#         whose tags v1, v2 (good), bad (never becomes Available: Degraded),
#         errors (Healthy, but its ConfigMap says 30 % of requests fail)
#         and syncfail (an invalid manifest: the sync fails) are revisions.
#
# Nothing is downloaded or built but kargo-fleet: the binaries come from the
# environment (docs/e2e.md, "The real Argo CD lane"). Every server listens on
# 127.0.0.1, except Argo CD's application controller metrics, which Argo CD
# v3.5.1 binds to 0.0.0.0 (controller/appcontroller.go).
#
# Idempotent: what already runs is kept, but for kargo-fleet's controller,
# which is restarted when the rebuilt binary differs. --fresh stops the lane and wipes
# $LANE_DIR first. Writes $LANE_DIR/lane.env (the variables the suite reads)
# and prints it.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
L=${LANE_DIR:-/tmp/kargo-fleet-argocd-lane}
# Below Linux's ephemeral range (32768-60999 by default), so no outgoing
# connection of another program (an envtest run beside) takes a lane port.
B=${LANE_PORT_BASE:-23000}
SECONDS=0
t() { echo "[$(date -u +%T)] +${SECONDS}s $*"; }
die() { echo "up.sh: $*" >&2; exit 1; }

# --- inputs ------------------------------------------------------------------
REDIS_SERVER=${REDIS_SERVER:-$(command -v redis-server || true)}
missing=()
need_file() { # VAR description
  local v=${!1:-}
  if [ -z "$v" ]; then missing+=("$1 ($2): not set"); elif [ ! -e "$v" ]; then missing+=("$1=$v ($2): does not exist"); fi
}
need_file KARGO_BIN "Kargo v1.11.2 control plane binary, go build ./cmd/controlplane"
need_file KARGO_CLI "Kargo v1.11.2 CLI, go build ./cmd/cli"
need_file ARGOCD_BIN "Argo CD v3.5.1 multi-call binary, go build ./cmd"
need_file ARGOCD_MANIFESTS "Argo CD v3.5.1 manifests/ folder (install.yaml)"
need_file KARGO_CHART "Kargo v1.11.2 charts/kargo folder"
need_file K8S_BIN_DIR "folder with kube-apiserver, etcd, kube-controller-manager, kube-scheduler"
need_file KWOK_BIN "kwok v0.8.0"
need_file KWOK_STAGES "kwok Stage objects (node and pod fast stages, node heartbeat with lease)"
need_file REDIS_SERVER "redis-server"
if [ -n "${K8S_BIN_DIR:-}" ] && [ -d "$K8S_BIN_DIR" ]; then
  for b in kube-apiserver etcd kube-controller-manager kube-scheduler; do
    [ -x "$K8S_BIN_DIR/$b" ] || missing+=("K8S_BIN_DIR=$K8S_BIN_DIR: no executable $b in it")
  done
fi
if [ -n "${ARGOCD_MANIFESTS:-}" ] && [ -d "$ARGOCD_MANIFESTS" ] && [ ! -f "$ARGOCD_MANIFESTS/install.yaml" ]; then
  missing+=("ARGOCD_MANIFESTS=$ARGOCD_MANIFESTS: no install.yaml in it")
fi
for tool in kubectl git openssl go curl; do command -v $tool >/dev/null || missing+=("$tool: not on PATH"); done
if [ ${#missing[@]} -gt 0 ]; then
  printf 'up.sh: cannot start the lane:\n' >&2; printf '  %s\n' "${missing[@]}" >&2
  echo "docs/e2e.md (\"The real Argo CD lane\") says how to build each binary." >&2; exit 2
fi
ARGOCD_HACK=$(dirname "$ARGOCD_BIN")
for w in gpg-wrapper.sh git-verify-wrapper.sh; do
  [ -x "$ARGOCD_HACK/$w" ] || die "$ARGOCD_HACK/$w missing: Argo CD's repo server needs hack/$w of the Argo CD source beside ARGOCD_BIN"
done

if [ "${1:-}" = --fresh ]; then
  [ -x "$L/down.sh" ] && "$L/down.sh" >/dev/null 2>&1 || true
  "$REPO/hack/argocd-lane/down.sh" >/dev/null 2>&1 || true
  rm -rf "$L"
fi
mkdir -p "$L"/{bin,logs,run,kc,data,pki,render}
cd "$L"
cp -f "$REPO/hack/argocd-lane/down.sh" "$L/down.sh"
t "lane in $L (ports $B-$((B+699)))"

# --- processes -----------------------------------------------------------------
# proc_start PID: when the process started (field 22 of /proc/PID/stat,
# clock ticks since boot); with its PID, it names one process for good.
proc_start() { sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f20; }
# alive NAME: the process run/NAME.pid names runs and is the one start()
# started (its HOME is run/NAME.home, or it started when run/NAME.start
# says: Redis overwrites its environment with its process title): a PID
# file left by a lane that died may name another process since.
alive() {
  [ -f "run/$1.pid" ] || return 1
  local p s; p=$(cat "run/$1.pid")
  kill -0 "$p" 2>/dev/null || return 1
  tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null | grep -qx "HOME=$L/run/$1.home" && return 0
  s=$(cat "run/$1.start" 2>/dev/null)
  [ -n "$s" ] && [ "$(proc_start "$p")" = "$s" ]
}
# start NAME ENVFILE CMD...: runs CMD with only PATH, HOME and the NAME=VALUE
# lines of ENVFILE ("-" for none) in its environment; PID in run/NAME.pid,
# start time in run/NAME.start.
start() {
  local n=$1 envf=$2; shift 2
  if alive "$n"; then return 0; fi
  local E=()
  [ "$envf" != - ] && mapfile -t E < <(grep -v '^\s*$' "$envf")
  mkdir -p "run/$n.home"
  echo "[$(date -u +%T.%3N)] starting $n" >> "logs/$n.log"
  nohup env -i PATH="$L/bin:/usr/local/bin:/usr/bin:/bin" HOME="$L/run/$n.home" "${E[@]}" "$@" >> "logs/$n.log" 2>&1 &
  echo $! > "run/$n.pid"
  proc_start $! > "run/$n.start"
}
wait_for() { # description seconds command...
  local what=$1 secs=$2; shift 2
  for _ in $(seq 1 $((secs * 4))); do "$@" >/dev/null 2>&1 && return 0; sleep 0.25; done
  die "$what not ready after ${secs}s (logs in $L/logs)"
}

# --- PKI -------------------------------------------------------------------------
(
  cd pki; umask 077
  [ -f ca.key ] || openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 365 -subj "/CN=kargo-fleet-argocd-lane" 2>/dev/null
  if [ ! -f serving.crt ]; then
    openssl req -newkey rsa:2048 -nodes -keyout serving.key -out serving.csr -subj "/CN=127.0.0.1" 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\n' > serving.ext
    openssl x509 -req -in serving.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out serving.crt -days 365 -extfile serving.ext 2>/dev/null
  fi
  for c in hub d1 d2 d3 d4; do
    [ -f sa-$c.key ] || { openssl genrsa -out sa-$c.key 2048 2>/dev/null; openssl rsa -in sa-$c.key -pubout -out sa-$c.pub 2>/dev/null; }
  done
  [ -f tokens.csv ] || echo "$(openssl rand -hex 24),admin,admin-uid,system:masters" > tokens.csv
  [ -f admin-password ] || openssl rand -hex 12 > admin-password
  [ -f token-signing-key ] || openssl rand -hex 24 > token-signing-key
  chmod 644 ca.crt serving.crt
)

# --- clusters ----------------------------------------------------------------------
CLUSTERS=(hub d1 d2 d3 d4)
idx() { case $1 in hub) echo 0;; d1) echo 1;; d2) echo 2;; d3) echo 3;; d4) echo 4;; esac; }
api_port() { echo $((B + 100 * $(idx "$1") + 43)); }
kubeconfig() { # file server user token [namespace]
  ( umask 077; cat > "$1" <<KC
apiVersion: v1
kind: Config
clusters: [{name: lane, cluster: {server: "$2", certificate-authority: "$L/pki/ca.crt"}}]
users: [{name: "$3", user: {token: "$4"}}]
contexts: [{name: lane, context: {cluster: lane, user: "$3"${5:+, namespace: "$5"}}}]
current-context: lane
KC
  )
}
cluster_up() {
  local n=$1 i; i=$(idx "$n")
  local ec=$((B + 100 * i + 10)) ep=$((B + 100 * i + 11)) em=$((B + 100 * i + 12)) ap; ap=$(api_port "$n")
  local adm=ServiceAccount
  [ "$n" != hub ] && adm=ServiceAccount,TaintNodesByCondition
  start "$n-etcd" - "$K8S_BIN_DIR/etcd" --name "$n" --data-dir "data/$n-etcd" \
    --listen-client-urls "http://127.0.0.1:$ec" --advertise-client-urls "http://127.0.0.1:$ec" \
    --listen-peer-urls "http://127.0.0.1:$ep" --initial-advertise-peer-urls "http://127.0.0.1:$ep" \
    --initial-cluster "$n=http://127.0.0.1:$ep" --listen-metrics-urls "http://127.0.0.1:$em" \
    --quota-backend-bytes 2147483648 --unsafe-no-fsync
  start "$n-apiserver" - "$K8S_BIN_DIR/kube-apiserver" --etcd-servers "http://127.0.0.1:$ec" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$ap" \
    --tls-cert-file pki/serving.crt --tls-private-key-file pki/serving.key \
    --client-ca-file pki/ca.crt --token-auth-file pki/tokens.csv \
    --authorization-mode RBAC --service-cluster-ip-range 10.0.0.0/24 \
    --service-account-issuer https://kubernetes.default.svc --service-account-key-file "pki/sa-$n.pub" \
    --service-account-signing-key-file "pki/sa-$n.key" --service-account-max-token-expiration 720h \
    --endpoint-reconciler-type none --allow-privileged=true --enable-priority-and-fairness=false \
    --disable-admission-plugins "$adm"
  kubeconfig "kc/$n-admin.kubeconfig" "https://127.0.0.1:$ap" admin "$(cut -d, -f1 pki/tokens.csv)"
}
for c in "${CLUSTERS[@]}"; do cluster_up "$c"; done
for c in "${CLUSTERS[@]}"; do
  wait_for "kube-apiserver $c" 120 kubectl --kubeconfig "kc/$c-admin.kubeconfig" get --raw /readyz
done
t "5 kube-apiservers ready: hub $(api_port hub), d1-d4 $(api_port d1)-$(api_port d4)"
HUB="kubectl --kubeconfig $L/kc/hub-admin.kubeconfig"
# established CRD...: every CRD named (all CRDs when none is) is Established.
# (kubectl wait fails at once on a CRD whose status has no conditions yet.)
established() {
  local out
  out=$($HUB get crd "$@" -o jsonpath='{range .items[*]}{.metadata.name}={.status.conditions[?(@.type=="Established")].status}{"\n"}{end}' 2>/dev/null) || return 1
  [ -n "$out" ] && ! grep -qv '=True$' <<<"$out"
}
# sa_kubeconfig NAMESPACE SA: a TokenRequest kubeconfig of the hub for SA.
sa_kubeconfig() {
  kubeconfig "kc/$1-$2.kubeconfig" "https://127.0.0.1:$(api_port hub)" "system:serviceaccount:$1:$2" \
    "$($HUB -n "$1" create token "$2" --duration 720h)" "$1"
}

# --- build kargo-fleet and the renderer ------------------------------------------
( cd "$REPO" && GOTOOLCHAIN=local nice go build -o "$L/bin/kargo-fleet" ./cmd/kargo-fleet &&
  GOTOOLCHAIN=local nice go build -o "$L/bin/argocd-lane" ./hack/argocd-lane )
t "built kargo-fleet and hack/argocd-lane"

# --- Argo CD objects, Redis ---------------------------------------------------------
for ns in argocd kargo kargo-fleet; do
  $HUB create namespace $ns --dry-run=client -o yaml | $HUB apply -f - >/dev/null
done
bin/argocd-lane argocd-objects -manifests "$ARGOCD_MANIFESTS" -out render/argocd.yaml
$HUB apply -n argocd --server-side --force-conflicts -f render/argocd.yaml >/dev/null
wait_for "Argo CD's CRDs" 60 established applications.argoproj.io applicationsets.argoproj.io appprojects.argoproj.io
$HUB -n argocd patch cm argocd-cmd-params-cm --type merge -p "{\"data\":{
 \"repo.server\":\"127.0.0.1:$((B + 602))\", \"reposerver.listen.address\":\"127.0.0.1\",
 \"redis.server\":\"127.0.0.1:$((B + 601))\", \"controller.log.format\":\"text\", \"reposerver.log.format\":\"text\",
 \"applicationsetcontroller.log.format\":\"text\", \"applicationsetcontroller.enable.progressive.syncs\":\"false\",
 \"controller.status.processors\":\"10\", \"controller.operation.processors\":\"10\",
 \"controller.self.heal.timeout.seconds\":\"5\"}}" >/dev/null
# timeout.reconciliation: how often Argo CD compares every Application with
# git by itself; Kargo's argocd-update asks for a refresh when it syncs.
$HUB -n argocd patch cm argocd-cm --type merge -p '{"data":{"timeout.reconciliation":"30s","timeout.reconciliation.jitter":"5s"}}' >/dev/null
# argocd-server creates server.secretkey at its first start; the lane runs no
# argocd-server, and without the key the controller ignores every later
# settings change.
$HUB -n argocd get secret argocd-secret -o jsonpath='{.data.server\.secretkey}' | grep -q . ||
  $HUB -n argocd patch secret argocd-secret --type merge -p "{\"stringData\":{\"server.secretkey\":\"$(openssl rand -base64 32)\"}}" >/dev/null
$HUB -n argocd get secret argocd-redis >/dev/null 2>&1 ||
  $HUB -n argocd create secret generic argocd-redis --from-literal=auth="$(openssl rand -hex 16)" >/dev/null
$HUB apply -f - >/dev/null <<'Y'
apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata: {name: default, namespace: argocd}
spec:
  sourceRepos: ['*']
  destinations: [{server: '*', namespace: '*'}]
  clusterResourceWhitelist: [{group: '*', kind: '*'}]
Y
mkdir -p data/redis
( umask 077; printf 'bind 127.0.0.1\nport %s\nsave ""\nappendonly no\ndir %s\nrequirepass %s\n' $((B + 601)) "$L/data/redis" \
  "$($HUB -n argocd get secret argocd-redis -o jsonpath='{.data.auth}' | base64 -d)" > data/redis/redis.conf )
start redis - "$REDIS_SERVER" "$L/data/redis/redis.conf"
t "Argo CD objects applied, Redis on $((B + 601))"

# --- Kargo ---------------------------------------------------------------------------
[ -f pki/admin-password.hash ] || bin/argocd-lane bcrypt "$(cat pki/admin-password)" > pki/admin-password.hash
bin/argocd-lane kargo -chart "$KARGO_CHART" -out render -ca pki/ca.crt -api-port $((B + 621)) -webhook-port $((B + 620)) \
  -password-hash "$(cat pki/admin-password.hash)" -signing-key "$(cat pki/token-signing-key)"
$HUB apply --server-side --force-conflicts -f render/kargo-crds.yaml >/dev/null
wait_for "Kargo's CRDs" 60 established
$HUB apply --server-side --force-conflicts -f render/kargo.yaml >/dev/null
run_kargo() { # deployment [extra NAME=VALUE...]
  local d=$1; shift
  local sa; sa=$(sed -n 's/^SERVICE_ACCOUNT=//p' "render/env/$d.env")
  sa_kubeconfig kargo "$sa"
  mkdir -p "run/$d"
  { grep -v '^SERVICE_ACCOUNT=' "render/env/$d.env"; echo "KUBECONFIG=$L/kc/kargo-$sa.kubeconfig"; echo "TMPDIR=$L/run/$d"
    printf '%s\n' "$@"; } > "run/$d.env"
  local args; mapfile -t args < <(grep -v '^\s*$' "render/env/$d.args")
  start "$d" "run/$d.env" "$KARGO_BIN" "${args[@]}"
}
mkdir -p run/kargo-webhooks-server/k8s-webhook-server/serving-certs
cp -n pki/serving.crt run/kargo-webhooks-server/k8s-webhook-server/serving-certs/tls.crt
cp -n pki/serving.key run/kargo-webhooks-server/k8s-webhook-server/serving-certs/tls.key
run_kargo kargo-webhooks-server WEBHOOK_SERVER_PORT=$((B + 620))
wait_for "Kargo's webhooks server" 60 curl -sk "https://127.0.0.1:$((B + 620))/"
run_kargo kargo-management-controller
run_kargo kargo-api BIND_ADDRESS=127.0.0.1 PORT=$((B + 621))
# Kargo's controller reaches Argo CD's Applications through a client of its
# own: in a Pod, the in-cluster config; here the same kubeconfig.
run_kargo kargo-controller ARGOCD_KUBECONFIG="$L/kc/kargo-kargo-controller.kubeconfig"
wait_for "Kargo's API server" 60 curl -sf "http://127.0.0.1:$((B + 621))/healthz"
t "Kargo: webhooks server $((B + 620)), API server $((B + 621)), controller, management controller"

# --- Argo CD ---------------------------------------------------------------------------
ln -sf "$ARGOCD_BIN" bin/argocd
for c in application-controller repo-server applicationset-controller; do ln -sf "$ARGOCD_BIN" "bin/argocd-$c"; done
ln -sf "$ARGOCD_HACK/gpg-wrapper.sh" bin/gpg-wrapper.sh
ln -sf "$ARGOCD_HACK/git-verify-wrapper.sh" bin/git-verify-wrapper.sh
bin/argocd-lane argocd-env -manifests "$ARGOCD_MANIFESTS" -kubeconfig kc/hub-admin.kubeconfig -out render/argocd-env
run_argocd() { # component [KUBECONFIG=file] args...
  local c=$1 kc=; shift
  case ${1:-} in KUBECONFIG=*) kc=$1; shift;; esac
  local D=$L/run/argocd-$c
  mkdir -p "$D"/{tmp,home,app-config/ssh,app-config/tls,app-config/gpg/source,app-config/gpg/keys,helm,plugins}
  chmod 700 "$D/app-config/gpg/keys"
  $HUB -n argocd get cm argocd-ssh-known-hosts-cm -o jsonpath='{.data.ssh_known_hosts}' > "$D/app-config/ssh/ssh_known_hosts"
  { cat "render/argocd-env/$c.env"; cat <<ENV
KUBECACHEDIR=$D/tmp/kubecache
TMPDIR=$D/tmp
ARGOCD_APP_CONF_PATH=$D/app-config
ARGOCD_SSH_DATA_PATH=$D/app-config/ssh
ARGOCD_TLS_DATA_PATH=$D/app-config/tls
ARGOCD_GNUPGHOME=$D/app-config/gpg/keys
ARGOCD_GPG_DATA_PATH=$D/app-config/gpg/source
ARGOCD_PLUGINSOCKFILEPATH=$D/plugins
HELM_CACHE_HOME=$D/helm
HELM_CONFIG_HOME=$D/helm
HELM_DATA_HOME=$D/helm
$kc
ENV
    [ -f "run/argocd-$c.extra.env" ] && cat "run/argocd-$c.extra.env"
  } > "run/argocd-$c.env"
  start "argocd-$c" "run/argocd-$c.env" "$L/bin/argocd-$c" "$@"
}
sa_kubeconfig argocd argocd-application-controller
sa_kubeconfig argocd argocd-applicationset-controller
run_argocd repo-server --port $((B + 602)) --metrics-port $((B + 603)) --metrics-address 127.0.0.1
# The application controller's cache of each destination is watch-based;
# under load it was seen to keep a Deployment's stale status (the Application
# Progressing with the Deployment Available) until the watch's periodic
# re-list, every 10 minutes by default. The lane re-lists every
# $ARGOCD_WATCH_RESYNC (default 60s) to bound that (docs/e2e.md).
echo "ARGOCD_CLUSTER_CACHE_WATCH_RESYNC_DURATION=${ARGOCD_WATCH_RESYNC:-60s}" > run/argocd-application-controller.extra.env
run_argocd application-controller KUBECONFIG="$L/kc/argocd-argocd-application-controller.kubeconfig" --kubeconfig "$L/kc/argocd-argocd-application-controller.kubeconfig" --metrics-port $((B + 604))
run_argocd applicationset-controller KUBECONFIG="$L/kc/argocd-argocd-applicationset-controller.kubeconfig" \
  --metrics-addr 127.0.0.1:$((B + 605)) --probe-addr 127.0.0.1:$((B + 606)) --webhook-addr 127.0.0.1:$((B + 607)) \
  --argocd-repo-server 127.0.0.1:$((B + 602))
t "Argo CD: repo server $((B + 602)), application controller (metrics 0.0.0.0:$((B + 604))), ApplicationSet controller"

# --- destination clusters --------------------------------------------------------------
region() { case $1 in d1|d2) echo eu-west;; *) echo us-east;; esac; }
tier() { case $1 in d1) echo canary;; *) echo general;; esac; }
for c in d1 d2 d3 d4; do
  K="kubectl --kubeconfig $L/kc/$c-admin.kubeconfig"
  i=$(idx $c); kp=$((B + 100 * i + 50))
  $K apply -f - >/dev/null <<Y
apiVersion: v1
kind: ServiceAccount
metadata: {name: argocd-manager, namespace: kube-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: argocd-manager-role}
rules: [{apiGroups: ['*'], resources: ['*'], verbs: ['*']}, {nonResourceURLs: ['*'], verbs: ['*']}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: argocd-manager-role-binding}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: argocd-manager-role}
subjects: [{kind: ServiceAccount, name: argocd-manager, namespace: kube-system}]
---
apiVersion: v1
kind: Node
metadata:
  name: kwok-node-0
  annotations: {node.alpha.kubernetes.io/ttl: "0", kwok.x-k8s.io/node: fake}
  labels: {kubernetes.io/hostname: kwok-node-0, kubernetes.io/os: linux, kubernetes.io/arch: amd64, type: kwok}
spec: {}
status:
  allocatable: {cpu: "64", memory: 256Gi, pods: "500"}
  capacity: {cpu: "64", memory: 256Gi, pods: "500"}
Y
  if ! $HUB -n argocd get secret cluster-$c >/dev/null 2>&1; then
    T=$($K -n kube-system create token argocd-manager --duration 720h)
    $HUB apply -f - >/dev/null <<Y
apiVersion: v1
kind: Secret
metadata:
  name: cluster-$c
  namespace: argocd
  labels: {argocd.argoproj.io/secret-type: cluster, lane.kargo-fleet.io/cluster: "true", region: $(region $c), tier: $(tier $c)}
type: Opaque
stringData:
  name: $c
  server: https://127.0.0.1:$(api_port $c)
  config: '{"bearerToken":"$T","tlsClientConfig":{"insecure":false,"caData":"$(base64 -w0 pki/ca.crt)"}}'
Y
  fi
  start "$c-kwok" - "$KWOK_BIN" --kubeconfig "$L/kc/$c-admin.kubeconfig" -c "$KWOK_STAGES" --manage-all-nodes \
    --node-lease-duration-seconds 40 --server-address "127.0.0.1:$kp" --node-ip 127.0.0.1 --node-port "$kp" --cidr "10.$((243 + i)).0.0/24"
  start "$c-kube-controller-manager" - "$K8S_BIN_DIR/kube-controller-manager" --kubeconfig "$L/kc/$c-admin.kubeconfig" \
    --authentication-kubeconfig "$L/kc/$c-admin.kubeconfig" --authorization-kubeconfig "$L/kc/$c-admin.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port $((kp + 7)) --leader-elect=false \
    --controllers deployment-controller,replicaset-controller,garbage-collector-controller,namespace-controller,node-lifecycle-controller
  start "$c-kube-scheduler" - "$K8S_BIN_DIR/kube-scheduler" --kubeconfig "$L/kc/$c-admin.kubeconfig" \
    --authentication-kubeconfig "$L/kc/$c-admin.kubeconfig" --authorization-kubeconfig "$L/kc/$c-admin.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port $((kp + 9)) --leader-elect=false
done
t "destination clusters d1-d4 registered (region, tier labels), kwok + kube-controller-manager + kube-scheduler each"

# --- git -------------------------------------------------------------------------------------
GIT_PORT=$((B + 610))
GIT_URL=git://127.0.0.1:$GIT_PORT/apps.git
if [ ! -d data/git/apps.git ]; then
  mkdir -p data/git/work
  git init -q --bare data/git/apps.git
  touch data/git/apps.git/git-daemon-export-ok
  (
    cd data/git/work
    git init -q -b main .
    git config user.email lane@example.invalid; git config user.name "argocd lane"
    mkdir -p app
    # rev VERSION TAG [extra spec of the Pod template] [progressDeadlineSeconds]
    # The ConfigMap's errorRatio is the share of failed requests the suite's
    # traffic exporter gives a target running this revision (ERRORS, default
    # 0.01).
    rev() {
      cat > app/configmap.yaml <<Y
apiVersion: v1
kind: ConfigMap
metadata: {name: web-config}
data: {version: "$1", errorRatio: "${ERRORS:-0.01}"}
Y
      cat > app/deployment.yaml <<Y
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, labels: {app: web}}
spec:
  replicas: 1
  progressDeadlineSeconds: ${4:-600}
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}, annotations: {lane.kargo-fleet.io/version: "$1"}}
    spec:
      containers: [{name: web, image: "registry.invalid/lane/web:$1"}]$3
Y
      rm -f app/broken.yaml
      git add -A app; git commit -qm "web $1"; git tag -f "$2" >/dev/null
    }
    rev 1.0 v1 "" ""
    rev 2.0 v2 "" ""
    # bad: the new Pods fit no node, so the rollout never progresses; after
    # progressDeadlineSeconds the Deployment reports ProgressDeadlineExceeded
    # and Argo CD's health of the Application is Degraded.
    rev 3.0-bad bad $'\n      nodeSelector: {lane.kargo-fleet.io/no-such-node: "true"}' 15
    # errors: rolls out and is Healthy in Argo CD, but fails 30 % of its
    # requests: only a wave analysis of the service's error rate catches it.
    ERRORS=0.3 rev 4.0-errors errors "" ""
    # syncfail: an object the API server refuses, so the sync fails.
    rev 2.0 syncfail-base "" ""
    printf 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: Not_A_Valid_Name}\ndata: {a: b}\n' > app/broken.yaml
    git add -A app; git commit -qm "invalid manifest"; git tag -f syncfail >/dev/null
    git push -q ../apps.git main --tags
  )
fi
start git-daemon - git daemon --listen=127.0.0.1 --port=$GIT_PORT --base-path="$L/data/git" --export-all --reuseaddr "$L/data/git"
wait_for "git daemon" 20 git ls-remote "$GIT_URL"
t "git daemon: $GIT_URL (tags: $(git ls-remote --tags "$GIT_URL" | sed 's|.*refs/tags/||' | tr '\n' ' '))"

# --- kargo-fleet -----------------------------------------------------------------------------
bin/argocd-lane fleet -out render -ca pki/ca.crt -webhook-port $((B + 630)) -steps-port $((B + 631)) \
  -metrics-port $((B + 632)) -probes-port $((B + 633))
$HUB apply --server-side --force-conflicts -f render/kargo-fleet-crds.yaml >/dev/null
wait_for "kargo-fleet's CRDs" 60 established fleetstages.fleet.kargo-fleet.io fleetrollouts.fleet.kargo-fleet.io
# The ClusterPromotionTasks are validated by Kargo's webhooks server (up).
$HUB apply --server-side --force-conflicts -f render/kargo-fleet.yaml >/dev/null
sa_kubeconfig kargo-fleet kargo-fleet
mkdir -p run/kargo-fleet/webhook-certs run/kargo-fleet/steps-tls
cp -n pki/serving.crt run/kargo-fleet/webhook-certs/tls.crt; cp -n pki/serving.key run/kargo-fleet/webhook-certs/tls.key
cp -n pki/serving.crt run/kargo-fleet/steps-tls/tls.crt; cp -n pki/serving.key run/kargo-fleet/steps-tls/tls.key
# The chart's flags and environment, bound to 127.0.0.1 and the lane's files.
sed -e "s|=:\([0-9]\)|=127.0.0.1:\1|" -e "s|/etc/kargo-fleet/steps-tls|$L/run/kargo-fleet/steps-tls|" \
  -e '/^GOMEMLIMIT=/d' -e '/^SERVICE_ACCOUNT=/d' render/env/kargo-fleet.env > run/kargo-fleet.env
echo "KUBECONFIG=$L/kc/kargo-fleet-kargo-fleet.kubeconfig" >> run/kargo-fleet.env
mapfile -t FLEET_ARGS < <(sed -e "s|=:\([0-9]\)|=127.0.0.1:\1|" \
  -e "s|--webhook-cert-dir=.*|--webhook-cert-dir=$L/run/kargo-fleet/webhook-certs|" render/env/kargo-fleet.args | grep -v '^\s*$')
# A kargo-fleet rebuilt from changed sources replaces the running one.
SUM=$(sha256sum bin/kargo-fleet | cut -d' ' -f1)
if alive kargo-fleet && [ "$(cat run/kargo-fleet.sha256 2>/dev/null)" != "$SUM" ]; then
  if alive kargo-fleet; then
    kill "$(cat run/kargo-fleet.pid)"; for _ in $(seq 1 40); do alive kargo-fleet || break; sleep 0.25; done
  fi
  t "kargo-fleet changed: restarting its controller"
fi
alive kargo-fleet || echo "$SUM" > run/kargo-fleet.sha256
start kargo-fleet run/kargo-fleet.env "$L/bin/kargo-fleet" "${FLEET_ARGS[@]}"
wait_for "kargo-fleet's controller" 90 curl -sf "http://127.0.0.1:$((B + 633))/readyz"
t "kargo-fleet controller: webhook $((B + 630)), steps $((B + 631)), metrics $((B + 632)), probes $((B + 633))"

# --- kargo CLI, admin kubeconfig of the suite ----------------------------------------------
cat > bin/kargo <<SH
#!/usr/bin/env bash
# The kargo CLI with the lane's configuration (logged in as admin).
XDG_CONFIG_HOME=$L/kargo-cli exec "$KARGO_CLI" "\$@"
SH
chmod +x bin/kargo
bin/kargo login "http://127.0.0.1:$((B + 621))" --admin --password "$(cat pki/admin-password)" >/dev/null ||
  die "kargo login failed (log: $L/logs/kargo-api.log)"

# --- smoke: Argo CD reaches every destination and the git daemon ------------------------------
$HUB apply -f - >/dev/null <<Y
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: lane-smoke, namespace: argocd}
spec:
  goTemplate: true
  generators: [{clusters: {selector: {matchLabels: {lane.kargo-fleet.io/cluster: "true"}}}}]
  template:
    metadata: {name: 'lane-smoke-{{ .name }}'}
    spec:
      project: default
      source: {repoURL: "$GIT_URL", targetRevision: v1, path: app}
      destination: {server: '{{ .server }}', namespace: lane-smoke}
      syncPolicy: {automated: {}, syncOptions: [CreateNamespace=true]}
Y
smoke_ok() {
  [ "$($HUB -n argocd get applications lane-smoke-d1 lane-smoke-d2 lane-smoke-d3 lane-smoke-d4 \
    -o jsonpath='{range .items[*]}{.status.sync.status}/{.status.health.status} {end}')" = "Synced/Healthy Synced/Healthy Synced/Healthy Synced/Healthy " ]
}
wait_for "Argo CD syncing lane-smoke-d1..d4 to Synced/Healthy" 180 smoke_ok
for c in d1 d2 d3 d4; do
  kubectl --kubeconfig "kc/$c-admin.kubeconfig" -n lane-smoke get deploy web -o jsonpath='{.status.availableReplicas}' | grep -qx 1 ||
    die "the smoke Deployment on $c is not Available"
done
t "smoke: lane-smoke-d1..d4 Synced/Healthy, Deployment web Available on every destination"

cat > lane.env <<ENV
export E2E_ARGOCD_LANE_DIR=$L
export E2E_ARGOCD_HUB_KUBECONFIG=$L/kc/hub-admin.kubeconfig
export E2E_ARGOCD_CLUSTER_KUBECONFIGS=d1=$L/kc/d1-admin.kubeconfig,d2=$L/kc/d2-admin.kubeconfig,d3=$L/kc/d3-admin.kubeconfig,d4=$L/kc/d4-admin.kubeconfig
export E2E_ARGOCD_KARGO_API=http://127.0.0.1:$((B + 621))
export E2E_ARGOCD_KARGO_CLI=$L/bin/kargo
export E2E_ARGOCD_GIT_URL=$GIT_URL
ENV
echo
echo "The lane is up (${SECONDS}s). For the suite: source $L/lane.env"
cat lane.env
echo "Kargo API server:   http://127.0.0.1:$((B + 621)) (admin password in $L/pki/admin-password; $L/bin/kargo is logged in)"
echo "kargo-fleet:        metrics http://127.0.0.1:$((B + 632))/metrics, log $L/logs/kargo-fleet.log"
echo "Processes:          $L/run/*.pid, logs in $L/logs; stop with $L/down.sh"
