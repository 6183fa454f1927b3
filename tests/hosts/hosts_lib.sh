# The multi-host fault harness's helpers (tests/hosts/README.md); sourced by
# run.sh. Every guard runs as its own host: its own network namespace, UTS
# namespace (host name) and PID namespace (the guard is its PID 1, so its
# child dies with it). The store server runs in a server namespace, reached
# over a veth pair per host (10.231.<i>.1/30 on the server's side,
# 10.231.<i>.2/30 on host i's); nothing is configured outside these
# namespaces. Per host, a fault proxy (hosts-fault-proxy) in the host's
# namespace forwards 127.0.0.1:<port> over the link to a relay in the
# server's namespace, which forwards to the server on its 127.0.0.1:<port>,
# so store URLs are the same on every host. Faults: nftables drop rules in
# the host's namespace (partition, one-way loss), the proxy (delay, stall,
# reset), SIGSTOP of every process of the host (pause), a server restart,
# libfaketime on a guard (clock skew). Everything is undone on exit.
set -euo pipefail

HOSTS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SERVERS=$HOSTS_DIR/../integration/servers
: "${INSTANCE_GUARD_BIN:?INSTANCE_GUARD_BIN must name the instance-guard binary}"
BIN=$INSTANCE_GUARD_BIN
HOSTS_CHECK=${HOSTS_CHECK:-$(dirname "$BIN")/hosts-check}
HOSTS_PROXY=${HOSTS_PROXY:-$(dirname "$BIN")/hosts-fault-proxy}
export HOSTS_CHECK

# Where the harness cannot run: skip (77), but fail under CI=true, so it can
# never silently stop running there.
hosts_cannot_run() {
  if [[ ${CI:-} == true ]]; then
    echo "FAIL: the multi-host harness cannot run here (CI=true): $*" >&2
    exit 1
  fi
  echo "SKIP: the multi-host harness cannot run here: $*"
  exit 77
}

source "$HOSTS_DIR/../support/shell.sh"  # fail, ok, now_ms, wait_until
# Polls every 100 ms: each poll forks a few processes, and a cycle's events
# are hundreds of milliseconds apart (the checker reads exact times anyway).
WAIT_POLL=0.1

[[ -x $HOSTS_CHECK && -x $HOSTS_PROXY ]] ||
  fail "$HOSTS_CHECK or $HOSTS_PROXY is not built (cmake --build build --target hosts-check hosts-fault-proxy)"
command -v jq >/dev/null || fail "jq is needed (scripts/deps.sh installs it)"

# Checks that namespaces, veth pairs and nftables work here.
hosts_require() {
  [[ $(id -u) == 0 ]] || hosts_cannot_run "namespaces need root"
  command -v ip >/dev/null && command -v unshare >/dev/null ||
    hosts_cannot_run "ip (iproute2) and unshare (util-linux) are needed"
  command -v nft >/dev/null || hosts_cannot_run "nft is needed (Debian package nftables; scripts/deps.sh)"
  local probe=igprobe$$
  if ! ip netns add "$probe" 2>/dev/null; then
    hosts_cannot_run "ip netns add failed (no CAP_SYS_ADMIN, or /run/netns not writable)"
  fi
  local why=""
  ip -n "$probe" link add p0 type veth peer name p1 2>/dev/null || why="veth pairs cannot be made"
  [[ -n $why ]] || ip netns exec "$probe" nft add table inet probe 2>/dev/null ||
    why="nftables does not work in a namespace"
  [[ -n $why ]] || ip netns exec "$probe" unshare --uts --pid --fork --kill-child true 2>/dev/null ||
    why="unshare --uts --pid fails"
  ip netns del "$probe"
  [[ -z $why ]] || hosts_cannot_run "$why"
}

WORK=$(mktemp -d "${TMPDIR:-/tmp}/instance-guard-hosts.XXXXXX")
chmod a+x "$WORK"  # servers that drop root (lighttpd, PostgreSQL) traverse it
TAG=ig$$
NS_SRV=$TAG-srv
HOSTS=()       # host names, h1 h2 ...
BG_PIDS=()     # host loops and proxies
SERVER_STOPS=()  # "script|dir" of every server started
EVENTS=$WORK/events
export HOSTS_EVENTS=$EVENTS
: >"$EVENTS"

hosts_cleanup() {
  local pid ns entry
  touch "$WORK/stop" 2>/dev/null || true
  for pid in "${BG_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  local in_srv=()
  [[ ! -e /run/netns/$NS_SRV ]] || in_srv=(ip netns exec "$NS_SRV")
  for entry in "${SERVER_STOPS[@]}"; do
    "${in_srv[@]}" bash "${entry%%|*}" stop "${entry#*|}" >/dev/null 2>&1 || true
  done
  # Every process left in our namespaces (guards, children, proxies), by namespace.
  for ns in "$NS_SRV" "${HOSTS[@]/#/$TAG-}"; do
    [[ -e /run/netns/$ns ]] || continue
    ip netns pids "$ns" 2>/dev/null | while read -r pid; do
      kill -CONT "$pid" 2>/dev/null || true
      kill -KILL "$pid" 2>/dev/null || true
    done || true
  done
  for pid in "${BG_PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  for ns in "${HOSTS[@]/#/$TAG-}" "$NS_SRV"; do ip netns del "$ns" 2>/dev/null || true; done
  if [[ -n ${HOSTS_KEEP:-} ]]; then
    echo "kept $WORK"
  else
    rm -rf "$WORK"
  fi
}
trap hosts_cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT
trap 'exit 129' HUP

# event KIND HOST ARG: appends to the event log (check.hpp).
event() { "$HOSTS_CHECK" emit "$EVENTS" "$1" "$2" "$3"; }

# hosts_make N: the server namespace and N host namespaces with their links.
hosts_make() {
  local i ns
  ip netns add "$NS_SRV"
  ip -n "$NS_SRV" link set lo up
  for ((i = 1; i <= $1; i++)); do
    ns=$TAG-h$i
    HOSTS+=("h$i")
    ip netns add "$ns"
    ip -n "$ns" link set lo up
    ip -n "$NS_SRV" link add "s$i" type veth peer name eth0 netns "$ns"
    ip -n "$NS_SRV" addr add "10.231.$i.1/30" dev "s$i"
    ip -n "$NS_SRV" link set "s$i" up
    ip -n "$ns" addr add "10.231.$i.2/30" dev eth0
    ip -n "$ns" link set eth0 up
    # The fault rules' table: empty until a fault fills it.
    ip netns exec "$ns" nft add table inet fault
    ip netns exec "$ns" nft add chain inet fault out '{ type filter hook output priority 0; }'
    ip netns exec "$ns" nft add chain inet fault in '{ type filter hook input priority 0; }'
  done
}

# hosts_connect PORT...: the relay in the server namespace and a fault proxy
# in each host's, for these server ports. Called again after a restart
# that moved the ports, it replaces them.
PROXY_PIDS=()
hosts_connect() {
  local i port relay_args=() host_args pid
  for pid in "${PROXY_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${PROXY_PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  PROXY_PIDS=()
  for ((i = 1; i <= ${#HOSTS[@]}; i++)); do
    for port in "$@"; do relay_args+=(--forward "10.231.$i.1:$port=127.0.0.1:$port"); done
  done
  start_proxy "$NS_SRV" relay "${relay_args[@]}"
  for ((i = 1; i <= ${#HOSTS[@]}; i++)); do
    host_args=()
    for port in "$@"; do host_args+=(--forward "127.0.0.1:$port=10.231.$i.1:$port"); done
    start_proxy "$TAG-h$i" "h$i" "${host_args[@]}"
  done
}

# start_proxy NAMESPACE NAME ARGS...: a fault proxy, controlled at $WORK/NAME.sock.
start_proxy() {
  local ns=$1 name=$2
  shift 2
  ip netns exec "$ns" "$HOSTS_PROXY" --control "$WORK/$name.sock" "$@" \
    >"$WORK/$name.proxy.out" 2>"$WORK/$name.proxy.err" &
  BG_PIDS+=("$!")
  PROXY_PIDS+=("$!")
  wait_until 10 grep -q ready "$WORK/$name.proxy.out" ||
    fail "the proxy $name did not start: $(cat "$WORK/$name.proxy.err")"
}

# proxy HOST COMMAND: sends a command to HOST's fault proxy (hosts-fault-proxy).
proxy() {
  local reply
  reply=$("$HOSTS_PROXY" --send "$WORK/$1.sock" "$2") || fail "proxy $1: $2: $reply"
}

# start_store NAME SCRIPT PORT [VAR=VALUE...]: a server from
# tests/integration/servers in the server namespace; its URL in $STORE_URL.
start_store() {
  local name=$1 script=$SERVERS/$2 port=$3
  shift 3
  STORE_URL=$(ip netns exec "$NS_SRV" env WATCH_PID=$$ "$@" bash "$script" start "$WORK/$name" "$port" \
    2>"$WORK/$name.start.err") || fail "could not start $name: $(cat "$WORK/$name.start.err")"
  SERVER_STOPS+=("$script|$WORK/$name")
}

# A process's PID namespace.
pidns() { readlink "/proc/$1/ns/pid" 2>/dev/null; }

# host_pids HOST: every process in HOST's PID namespaces (its guard and the
# guard's children), not the proxy in its network namespace.
host_pids() {
  local ours pid
  ours=$(pidns $$)
  ip netns pids "$TAG-$1" 2>/dev/null | while read -r pid; do
    local ns
    ns=$(pidns "$pid") || continue
    [[ -z $ns || $ns == "$ours" ]] || echo "$pid"
  done
  return 0  # (a caller's `pids=$(host_pids ...)` must not trip set -e)
}

# host_guard HOST: the pid of HOST's guard (PID 1 of its PID namespace), if any.
host_guard() {
  local pid
  for pid in $(host_pids "$1"); do
    [[ $(awk '/^NSpid:/ { print $NF }' "/proc/$pid/status" 2>/dev/null) == 1 ]] && echo "$pid"
  done
  return 0
}

# host_loop HOST MODE URL [GUARD ARGS...]: runs `instance-guard run --wait`
# as HOST, again whenever it exits, until $WORK/stop exists. Each run gets
# a new id and its own log ($WORK/$PHASE_NAME.HOST.<n>.err; $WORK/HOST.log
# names the current one). $HOSTS_ENV_<HOST> (words VAR=VALUE) goes into the guard's
# environment: libfaketime for a skewed clock.
host_loop() {
  local host=$1 mode=$2 url=$3 n=0 status
  shift 3
  local skew_var="HOSTS_ENV_$host"
  local -a extra_env
  read -r -a extra_env <<<"${!skew_var:-}"
  mkdir -p "$WORK/$host.state"
  while [[ ! -e $WORK/stop ]]; do
    n=$((n + 1))
    local log=$WORK/$PHASE_NAME.$host.$n
    echo "$log.err" >"$WORK/$host.log"
    status=0
    ip netns exec "$TAG-$host" unshare --uts --pid --fork --kill-child -- \
      env XDG_STATE_HOME="$WORK/$host.state" INSTANCE_GUARD_LIVENESS_DIR="$WORK/$host.state/live" \
      "${extra_env[@]}" bash -c 'hostname "$0"; exec "$@"' "$host" \
      "$BIN" --log-level debug run --store "$url" --mode "$mode" --ttl "$HOSTS_TTL" --wait \
      --id "$host-$n" "$@" -- bash "$HOSTS_DIR/child.sh" \
      >"$log.out" 2>"$log.err" </dev/null || status=$?
    event exit "$host" "$status"
    # Usage, configuration or internal errors would repeat forever: stop, say why.
    if ((status == 64 || status == 70 || status == 78)); then
      { echo "$host exited $status:"; tail -5 "$log.err"; } >"$WORK/fatal"
      return
    fi
    # A guard that cannot reach the store at all exits at once: not in a tight loop.
    [[ -e $WORK/stop ]] || sleep 0.2
  done
}

# holders: the hosts whose children run now (per the event log); holder: one of them.
holders() {
  awk '$2 == "start" { run[$3] = 1 } $2 == "stop" || $2 == "exit" { delete run[$3] }
       END { for (h in run) print h }' "$EVENTS"
}
holder() { holders | head -1; }
# pick_holder: sets $PICKED to a host whose child runs (read once: asking
# again could find it gone).
pick_holder() {
  [[ ! -e $WORK/fatal ]] || fail "$(cat "$WORK/fatal")"
  PICKED=$(holder)
  [[ -n $PICKED ]]
}
# A child started on a host other than $1 after the event log had $2 lines.
successor_started() {
  tail -n +"$(($2 + 1))" "$EVENTS" | awk -v h="$1" '$2 == "start" && $3 != h { f = 1 } END { exit !f }'
}
# renewals HOST: how many renewals HOST's current guard has logged;
# renewed_since HOST N: more than N.
renewals() { grep -c 'renewed' "$(cat "$WORK/$1.log")" 2>/dev/null || true; }
renewed_since() { (($(renewals "$1") > $2)); }
