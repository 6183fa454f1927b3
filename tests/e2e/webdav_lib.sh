# Helpers for e2e tests that need a loopback WebDAV server (Apache httpd or
# lighttpd, from tests/integration/servers). Source after lib.sh; it replaces
# the EXIT trap so the servers are stopped before the scratch folder goes.
SERVERS=${INSTANCE_TESTS_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}/integration/servers
chmod a+x "$WORK"  # run as root, the servers' workers (www-data) must traverse it
STARTED=()
stop_servers() {
  local dir
  for dir in "${STARTED[@]}"; do bash "${dir%%|*}" stop "${dir#*|}" >/dev/null 2>&1 || true; done
}
trap 'stop_servers; cleanup' EXIT

# A TCP port on 127.0.0.1 nobody answers on.
free_port() {
  local port
  while :; do
    port=$((20000 + RANDOM % 40000))
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || { echo "$port"; return; }
  done
}

# start_server NAME SCRIPT [PORT] [VAR=VALUE...]: starts a server in $WORK/NAME
# (on PORT, or a free one), with VAR=VALUE in the start script's environment
# (e.g. HTPASSWD=file); sets $URL and $PORT.
start_server() {
  local name=$1 script=$SERVERS/$2 port="" attempt
  shift 2
  if [[ ${1:-} =~ ^[0-9]+$ ]]; then
    port=$1
    shift
  fi
  for attempt in 1 2 3; do
    PORT=${port:-$(free_port)}
    if URL=$(env WATCH_PID=$$ "$@" bash "$script" start "$WORK/$name" "$PORT" 2>"$WORK/$name.start.err"); then
      STARTED+=("$script|$WORK/$name")
      return 0
    fi
  done
  cat "$WORK/$name.start.err" >&2
  fail "could not start $name"
}

# stop_server NAME SCRIPT: stops the server started as NAME.
stop_server() { bash "$SERVERS/$2" stop "$WORK/$1" >/dev/null 2>&1; }
