# Shell helpers shared by the end-to-end tests (tests/e2e/lib.sh) and the
# multi-host harness (tests/hosts/hosts_lib.sh): verdicts and bounded polling.

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
