# Helpers for e2e tests that need a loopback etcd (tests/integration/servers/
# etcd.sh, which installs etcd-server when missing). Source after lib.sh; it
# replaces the EXIT trap so etcd is stopped before the scratch folder goes.
ETCD_SCRIPT=${INSTANCE_TESTS_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}/integration/servers/etcd.sh
ETCD_CLUSTER_SCRIPT=$(dirname "$ETCD_SCRIPT")/etcd_cluster.sh
ETCD_STARTED=()
ETCD_CLUSTERS=()
stop_all_etcd() {
  local name
  for name in "${ETCD_STARTED[@]}"; do bash "$ETCD_SCRIPT" stop "$WORK/$name" >/dev/null 2>&1 || true; done
  for name in "${ETCD_CLUSTERS[@]}"; do bash "$ETCD_CLUSTER_SCRIPT" stop "$WORK/$name" >/dev/null 2>&1 || true; done
}
trap 'stop_all_etcd; cleanup' EXIT

# start_etcd NAME [PORT] [VAR=VALUE...]: starts (or restarts, keeping its
# data) etcd in $WORK/NAME on PORT or a free port, VAR=VALUE in the script's
# environment (ETCD_ROOT_PASSWORD=...); sets $ETCD_PORT and $ETCD_URL
# (http://127.0.0.1:PORT).
start_etcd() {
  local name=$1 port=""
  shift
  if [[ ${1:-} =~ ^[0-9]+$ ]]; then
    port=$1
    shift
  fi
  if ! start_server_script "$ETCD_SCRIPT" "$WORK/$name" "$port" "$@"; then
    cat "$WORK/$name.start.err" >&2
    fail "could not start etcd $name"
  fi
  ETCD_PORT=$PORT ETCD_URL=$URL
  ETCD_STARTED+=("$name")
}

# stop_etcd NAME: stops it, keeping its data (start_etcd NAME PORT restarts it).
stop_etcd() { bash "$ETCD_SCRIPT" stop "$WORK/$1" >/dev/null 2>&1; }

# etcd_get URL KEY: prints the value of an etcd key (nothing when absent).
etcd_get() {
  local key
  key=$(printf '%s' "$2" | base64 -w0)
  curl -s --max-time 5 "$1/v3/kv/range" -d "{\"key\":\"$key\"}" |
    jq -r '.kvs[0].value // empty' | base64 -d
}

# start_etcd_cluster NAME: starts a three-member cluster in $WORK/NAME
# (servers/etcd_cluster.sh); sets ETCD_MEMBERS (member i's client URL at
# index i; index 0 unused).
start_etcd_cluster() {
  local out rc=0
  ETCD_CLUSTERS+=("$1")
  out=$(WATCH_PID=$$ bash "$ETCD_CLUSTER_SCRIPT" start "$WORK/$1" 2>"$WORK/$1.start.err") || rc=$?
  ((rc == 0)) || { cat "$WORK/$1.start.err" >&2; fail "could not start etcd cluster $1"; }
  mapfile -t ETCD_MEMBERS < <(echo; echo "$out")
}

# etcd_member NAME stop|start|crash I: stops member I (TERM), crashes it
# (KILL) or starts it again, waiting until it serves.
etcd_member() {
  case $2 in
  stop) bash "$ETCD_CLUSTER_SCRIPT" stop-member "$WORK/$1" "$3" >/dev/null 2>&1 ;;
  crash) bash "$ETCD_CLUSTER_SCRIPT" stop-member "$WORK/$1" "$3" KILL >/dev/null 2>&1 ;;
  start) WATCH_PID=$$ bash "$ETCD_CLUSTER_SCRIPT" start-member "$WORK/$1" "$3" >/dev/null 2>"$WORK/$1.member.err" ||
    fail "member $3 of $1 did not come back: $(cat "$WORK/$1.member.err")" ;;
  esac
}

# etcd_leader NAME: prints the leader's member number.
etcd_leader() { bash "$ETCD_CLUSTER_SCRIPT" leader "$WORK/$1"; }
