# Shell helpers shared by the end-to-end tests (tests/e2e/lib.sh), the
# packaging tests (tests/packaging/lib.sh) and the multi-host harness
# (tests/hosts/hosts_lib.sh): verdicts, bounded polling, a free port.

fail() {
  echo "FAIL: $*" >&2
  exit 1
}
ok() { echo "ok: $*"; }

now_ms() { date +%s%3N; }

# wait_until SECONDS COMMAND...: runs COMMAND every 20 ms ($WAIT_POLL
# seconds when set) until it succeeds; fails after SECONDS.
wait_until() {
  local deadline=$(($(now_ms) + $1 * 1000))
  shift
  until "$@"; do
    (($(now_ms) < deadline)) || return 1
    sleep "${WAIT_POLL:-0.02}"
  done
}

# free_port: a TCP port on 127.0.0.1 that nobody answers on, for a server
# to bind or a client to find closed. Taken below the kernel's ephemeral
# range (ip_local_port_range), where the client side of every connection on
# this machine gets its port: a port from that range can be taken by some
# other test's connection between this check and the server's bind.
free_port() {
  local low=32768 port
  read -r low _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || true
  ((low > 11000)) || low=32768  # a range that leaves too little below it: the default's bound
  while :; do
    port=$((10000 + RANDOM % (low - 10000)))
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || { echo "$port"; return; }
  done
}

# start_server_script SCRIPT DIR PORT [VAR=VALUE...]: runs `SCRIPT start DIR
# PORT` (a script of tests/integration/servers/) with VAR=VALUE in its
# environment, stopped with this shell at the latest; with PORT empty, on a
# free port. Up to three tries: another test can take a free port between
# free_port and the server's bind. Sets $PORT, and $URL (what the script
# printed); the last try's errors are in DIR.start.err.
start_server_script() {
  local script=$1 dir=$2 port=$3 attempt
  shift 3
  for attempt in 1 2 3; do
    PORT=${port:-$(free_port)}
    URL=$(env WATCH_PID=$$ "$@" bash "$script" start "$dir" "$PORT" 2>"$dir.start.err") && return 0
  done
  return 1
}
