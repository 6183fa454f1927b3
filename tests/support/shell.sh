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

# closed_port: a TCP port on 127.0.0.1 nobody answers on.
closed_port() {
  local port
  while :; do
    port=$((20000 + RANDOM % 40000))
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || { echo "$port"; return; }
  done
}
