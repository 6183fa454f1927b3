# Helpers for e2e tests that need a loopback ZooKeeper (from
# tests/integration/servers/zookeeper.sh). Source after lib.sh; it replaces
# the EXIT trap so the servers are stopped before the scratch folder goes.
#   start_zk NAME [PORT]        starts one in $WORK/NAME; sets $ZK_URL, $ZK_PORT
#   stop_zk NAME / crash_zk NAME / restart_zk NAME
#   zk_dump NAME                the server's "dump": its sessions with
#                               ephemeral znodes, and their paths
ZK_SH=${INSTANCE_TESTS_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}/integration/servers/zookeeper.sh
ZK_STARTED=()
declare -A ZK_PORTS
stop_all_zk() {
  local name
  for name in "${ZK_STARTED[@]}"; do bash "$ZK_SH" stop "$WORK/$name" >/dev/null 2>&1 || true; done
}
trap 'stop_all_zk; cleanup' EXIT

start_zk() {
  local name=$1 port=${2:-} attempt rc
  for attempt in 1 2 3; do
    ZK_PORT=${port:-${ZK_PORTS[$name]:-$(free_port)}}
    rc=0
    ZK_URL=$(WATCH_PID=$$ bash "$ZK_SH" start "$WORK/$name" "$ZK_PORT" 2>"$WORK/$name.start.err") || rc=$?
    if ((rc == 0)); then
      ZK_PORTS[$name]=$ZK_PORT
      ZK_STARTED+=("$name")
      return 0
    fi
    ((rc == 77)) && { echo "SKIP: ZooKeeper is not installed (scripts/deps.sh)"; exit 0; }
  done
  cat "$WORK/$name.start.err" >&2
  fail "could not start ZooKeeper $name"
}

stop_zk() { bash "$ZK_SH" stop "$WORK/$1" >/dev/null 2>&1; }
crash_zk() { bash "$ZK_SH" crash "$WORK/$1" >/dev/null 2>&1; }
restart_zk() { start_zk "$1" "${ZK_PORTS[$1]}"; }

zk_dump() {
  (exec 3<>"/dev/tcp/127.0.0.1/${ZK_PORTS[$1]}" && echo dump >&3 && timeout 2 cat <&3)
}
