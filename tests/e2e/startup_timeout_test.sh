#!/usr/bin/env bash
# The start-up budget (--startup-timeout, INSTANCE_GUARD_STARTUP_TIMEOUT) is
# the one budget from `run` to claimed, refused or unreachable. Against a
# loopback port nothing listens on, WebDAV, etcd, Redis and PostgreSQL exit
# 69 within the budget plus one request timeout (the stores' own retry
# deadlines add nothing on top; WebDAV once took 38.5 s here), and log each
# retry at info: what failed, where, when the next attempt is.
source "$(dirname "$0")/lib.sh"

PORT=$(free_port)
BUDGET_MS=3000

# unreachable NAME URL REQUEST_TIMEOUT_MS FAILURE [ARGS...]: `run` against
# URL gives up with 69 within the 3 s budget plus one request timeout, after
# logging its retries, each saying FAILURE (a pattern) in its error.
unreachable() {
  local name=$1 url=$2 request_timeout_ms=$3 failure=$4 retries
  shift 4
  run_guard run --store "$url" "$@" -- true
  expect_exit 69 "$name against a closed port"
  ((ELAPSED_MS < BUDGET_MS + request_timeout_ms)) ||
    fail "$name gave up after ${ELAPSED_MS} ms: more than the budget plus one request timeout"
  # It kept trying for most of the budget: the last pause is at most 2 s.
  ((ELAPSED_MS >= BUDGET_MS - 2000)) || fail "$name gave up after only ${ELAPSED_MS} ms"
  grep 'info: the store did not answer; trying again' "$WORK/last.err" >"$WORK/retries" || true
  retries=$(wc -l <"$WORK/retries")
  ((retries >= 2)) || fail "$name logged $retries retries: $(cat "$WORK/last.err")"
  ! grep -v "127.0.0.1:$PORT" "$WORK/retries" | grep -q . ||
    fail "a retry line of $name does not name the endpoint: $(cat "$WORK/retries")"
  ! grep -v "error=.*$failure" "$WORK/retries" | grep -q . ||
    fail "a retry line of $name does not say what failed: $(cat "$WORK/retries")"
  ! grep -v 'next_attempt_in=' "$WORK/retries" | grep -q . ||
    fail "a retry line of $name does not say when the next attempt is: $(cat "$WORK/retries")"
  ok "$name: exit 69 after ${ELAPSED_MS} ms (budget 3 s), $retries retries logged at info"
}

unreachable webdav "webdav://127.0.0.1:$PORT/dav/state" 15000 'no reply' --startup-timeout 3s
INSTANCE_GUARD_STARTUP_TIMEOUT=3s unreachable etcd "etcd://127.0.0.1:$PORT/state" 10000 'no reply'
unreachable redis "redis://127.0.0.1:$PORT/0" 5000 'cannot connect' --startup-timeout 3s
unreachable postgres "postgres://127.0.0.1:$PORT/state" 5000 'refused' --startup-timeout 3s

# A malformed budget: a usage error for the flag, a configuration error for
# the variable.
run_guard run --store "$STORE" --startup-timeout soon -- true
expect_exit 64 "--startup-timeout soon"
grep -q -- '--startup-timeout' "$WORK/last.err" || fail "the flag is not named: $(cat "$WORK/last.err")"
INSTANCE_GUARD_STARTUP_TIMEOUT=-1s run_guard run --store "$STORE" -- true
expect_exit 78 "INSTANCE_GUARD_STARTUP_TIMEOUT=-1s"
grep -q INSTANCE_GUARD_STARTUP_TIMEOUT "$WORK/last.err" || fail "the variable is not named"
ok "a malformed budget is refused (64 for the flag, 78 for the variable)"
