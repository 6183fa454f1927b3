# Helpers for the end-to-end tests of the instance-guard binary; each
# *_test.sh sources this file. Needs bash, coreutils, grep and jq.
#
# Every test gets its own scratch folder ($WORK, with a store at $STORE and
# XDG_STATE_HOME under it), never touches the user's real state, and kills
# every process it started when it exits, however it exits. Waiting is done
# by polling with short, bounded loops (wait_until), never by fixed sleeps.
set -euo pipefail

: "${INSTANCE_GUARD_BIN:?INSTANCE_GUARD_BIN must name the instance-guard binary}"
BIN=$INSTANCE_GUARD_BIN
command -v jq >/dev/null || { echo "FAIL: jq is needed (scripts/deps.sh installs it)" >&2; exit 1; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/instance-guard-e2e.XXXXXX")
STORE=$WORK/store
mkdir -p "$STORE"
export XDG_STATE_HOME=$WORK/state
# clear_guard_env: forgets every INSTANCE_GUARD_* setting and credential.
clear_guard_env() {
  unset INSTANCE_GUARD_STORE INSTANCE_GUARD_TTL INSTANCE_GUARD_ID INSTANCE_GUARD_MODE INSTANCE_GUARD_USER \
    INSTANCE_GUARD_CS3_ID INSTANCE_GUARD_CS3_SECRET INSTANCE_GUARD_CS3_SECRET_FILE \
    INSTANCE_GUARD_PASSWORD INSTANCE_GUARD_TOKEN INSTANCE_GUARD_STARTUP_TIMEOUT \
    INSTANCE_GUARD_STAND_DOWN_TIMEOUT
}
clear_guard_env

# Background processes to kill on exit; children record their process
# groups in $WORK/pgids so their own children die too.
BG_PIDS=()
cleanup() {
  local pid pgid
  for pid in "${BG_PIDS[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  if [[ -f $WORK/pgids ]]; then
    while read -r pgid; do kill -KILL -- "-$pgid" 2>/dev/null || true; done <"$WORK/pgids"
  fi
  for pid in "${BG_PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT
trap 'exit 129' HUP

source "$(dirname "${BASH_SOURCE[0]}")/../support/shell.sh"  # fail, ok, now_ms, wait_until, free_port

# start_guard NAME ARGS...: runs `instance-guard ARGS...` in the background,
# output in $WORK/NAME.out and $WORK/NAME.err; its pid in $LAST_PID. Job
# control is on while it starts: a script's background commands otherwise
# start with SIGINT and SIGQUIT ignored, and the guard leaves ignored signals
# alone.
start_guard() {
  local name=$1
  shift
  set -m
  "$BIN" "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" &
  LAST_PID=$!
  set +m
  BG_PIDS+=("$LAST_PID")
}

# wait_exit PID SECONDS: waits (polling) for PID to end, then reaps it and
# sets $EXIT_CODE. Fails when it is still running after SECONDS.
wait_exit() {
  local pid=$1
  wait_until "$2" not_running "$pid" || fail "process $pid still running after $2 s"
  EXIT_CODE=0
  wait "$pid" || EXIT_CODE=$?
}

running() { kill -0 "$1" 2>/dev/null; }
not_running() { ! kill -0 "$1" 2>/dev/null || is_zombie "$1"; }
is_zombie() { [[ $(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) == Z ]]; }

# sleeper NAME: a script for `bash -c` that records its process group, writes
# "$WORK/NAME.started" (its pid and INSTANCE_GUARD_ID) and then sleeps.
export WORK
sleeper() {
  printf '%s' "echo \$\$ >>\"\$WORK/pgids\"; echo \"\$\$ \$INSTANCE_GUARD_ID\" >\"\$WORK/$1.started.tmp\"; mv \"\$WORK/$1.started.tmp\" \"\$WORK/$1.started\"; exec sleep 300"
}

# start_watched NAME ARGS...: start_guard NAME ARGS... -- a child that
# records its process group, writes its INSTANCE_GUARD_EPOCH to
# $WORK/NAME.epoch, touches $WORK/NAME.started, and on SIGTERM writes the
# time (ms) to $WORK/NAME.term and exits 0; waits (10 s at most) until it
# started. The guard's pid in $LAST_PID.
WATCHED_CHILD='echo $$ >>"$WORK/pgids"; trap "date +%s%3N >\"\$WORK/$1.term\"; exit 0" TERM; echo "$INSTANCE_GUARD_EPOCH" >"$WORK/$1.epoch"; touch "$WORK/$1.started"; sleep 300 & wait $!'
start_watched() {
  local name=$1
  shift
  start_guard "$name" "$@" -- bash -c "$WATCHED_CHILD" child "$name"
  wait_until 10 test -f "$WORK/$name.started" || fail "the child did not start: $(cat "$WORK/$name.err")"
}

# expect_fenced NAME PID SINCE_MS WITHIN_MS WHAT: the watched child NAME
# (start_watched) got SIGTERM within WITHIN_MS of SINCE_MS (now_ms) and its
# guard PID exited 75 with a 'claim lost' line; WHAT says what happened at
# SINCE_MS. Sets $TERM_MS, how long after SINCE_MS the child got SIGTERM.
expect_fenced() {
  local name=$1 pid=$2 since=$3 within=$4 what=$5
  wait_until 10 test -f "$WORK/$name.term" || fail "the child got no SIGTERM within 10 s of $what: $(tail -5 "$WORK/$name.err")"
  TERM_MS=$(($(cat "$WORK/$name.term") - since))
  wait_exit "$pid" 10
  [[ $EXIT_CODE == 75 ]] || { cat "$WORK/$name.err" >&2; fail "the guard exited $EXIT_CODE after $what, expected 75"; }
  grep -q 'claim lost' "$WORK/$name.err" || fail "no 'claim lost' line: $(tail -5 "$WORK/$name.err")"
  ((TERM_MS < within)) || fail "the child got SIGTERM $TERM_MS ms after $what (expected within $within ms)"
}

# run_guard ARGS...: runs instance-guard in the foreground; sets $EXIT_CODE,
# $ELAPSED_MS, and keeps stderr in $WORK/last.err, stdout in $WORK/last.out.
run_guard() {
  local start
  start=$(now_ms)
  EXIT_CODE=0
  "$BIN" "$@" >"$WORK/last.out" 2>"$WORK/last.err" || EXIT_CODE=$?
  ELAPSED_MS=$(($(now_ms) - start))
}

# The variables the stores read credentials from (instance/credentials.hpp);
# `run` removes them from the child's environment.
CREDENTIAL_VARS=(INSTANCE_GUARD_USER INSTANCE_GUARD_PASSWORD INSTANCE_GUARD_TOKEN INSTANCE_GUARD_CS3_ID
  INSTANCE_GUARD_CS3_SECRET INSTANCE_GUARD_CS3_SECRET_FILE)

# expect_clean_child_env FILE [SECRET...]: FILE, the output of `env` run as
# the guarded command, is a child's environment (it has INSTANCE_GUARD_ID)
# that holds no credential variable and none of the SECRETs.
expect_clean_child_env() {
  local file=$1 name secret
  shift
  grep -q '^INSTANCE_GUARD_ID=' "$file" || fail "$file is not a child's environment: $(cat "$file")"
  for name in "${CREDENTIAL_VARS[@]}"; do
    ! grep -q "^$name=" "$file" || fail "the child's environment holds $name"
  done
  for secret in "$@"; do
    ! grep -qF -- "$secret" "$file" || fail "the child's environment holds a credential's value"
  done
}

# expect_exit CODE DESCRIPTION: checks $EXIT_CODE from run_guard/wait_exit.
expect_exit() {
  [[ $EXIT_CODE == "$1" ]] || {
    cat "$WORK/last.err" >&2 2>/dev/null || true
    fail "$2: exit $EXIT_CODE, expected $1"
  }
}

# expect_down_store URL ADVICE: `run` against a store whose server is down
# exits 69 without running its command, the error holding ADVICE (a regex).
expect_down_store() {
  run_guard run --ttl 4s --store "$1" -- bash -c 'echo should-not-run'
  expect_exit 69 "run against a stopped server"
  grep -q -- "$2" "$WORK/last.err" || fail "no advice: $(cat "$WORK/last.err")"
  [[ ! -s $WORK/last.out ]] || fail "the command ran without a store"
  ok "a server that is down exits 69 in ${ELAPSED_MS} ms, saying what to check"
}

# expect_url_password_refused URL SECRET: a store URL holding the password
# SECRET is refused (78) without echoing it, pointing at where it goes.
expect_url_password_refused() {
  run_guard run --store "$1" -- bash -c 'echo no'
  expect_exit 78 "a password in the URL"
  ! grep -qF -- "$2" "$WORK/last.err" || fail "the password in the URL is echoed"
  grep -q 'INSTANCE_GUARD_PASSWORD' "$WORK/last.err" || fail "the refusal does not say where a password goes"
  ok "a password in the URL is refused (78) and not echoed"
}
