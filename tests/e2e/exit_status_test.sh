#!/usr/bin/env bash
# Exit codes: the child's status, 128+N for a signal death, 127/126 when the
# command cannot run, 64 usage, 78 bad store URL, 69 unreachable store.
source "$(dirname "$0")/lib.sh"

run_guard run --store "$STORE" -- sh -c 'exit 3'
expect_exit 3 "child exits 3"
run_guard run --store "$STORE" -- sh -c 'kill -TERM $$'
expect_exit 143 "child killed by SIGTERM"
run_guard run --store "$STORE" -- sh -c 'kill -KILL $$'
expect_exit 137 "child killed by SIGKILL"
run_guard run --store "$STORE" -- true
expect_exit 0 "child exits 0"
ok "child statuses come back (3, 143, 137, 0)"

run_guard run --store "$STORE" -- "$WORK/no-such-command"
expect_exit 127 "command not found"
grep -q 'no-such-command' "$WORK/last.err" || fail "no message naming the missing command"
run_guard run --store "$STORE" -- no-such-command-on-path
expect_exit 127 "command not on PATH"
printf 'not a program\n' >"$WORK/not-executable"
chmod 644 "$WORK/not-executable"
run_guard run --store "$STORE" -- "$WORK/not-executable"
expect_exit 126 "command not executable"
[[ -z $(ls -A "$STORE/instances") ]] || fail "a failed start left a record behind"
ok "127 and 126 for commands that cannot run, without a record left behind"

for args in "run --store $STORE" "run --store $STORE --ttl soon -- true" \
  "run --store $STORE --ttl 0s -- true" "run --store $STORE --ttl -5s -- true" \
  "run --store $STORE --password hunter2 -- true" "run --store $STORE --token abc -- true" \
  "run --store $STORE --no-such-flag -- true" "frobnicate" "" "release --store $STORE" \
  "--log-format yaml status --store $STORE"; do
  # shellcheck disable=SC2086
  run_guard $args
  expect_exit 64 "usage error for: $args"
done
ok "usage errors exit 64"

run_guard run --store 'file://remote-host/x' -- true
expect_exit 78 "file URL with a host"
run_guard run --store 'nosuchscheme://x' -- true
expect_exit 78 "unknown scheme"
INSTANCE_GUARD_TTL=forever run_guard run --store "$STORE" -- true
expect_exit 78 "malformed INSTANCE_GUARD_TTL"
ok "bad store URL or configuration exits 78"

touch "$WORK/a-file"
run_guard run --store "$WORK/a-file/store" -- true
expect_exit 69 "store folder below a regular file"
run_guard status --store "$WORK/a-file/store"
expect_exit 69 "status of an unusable store"
ok "an unusable store exits 69"

for sub in "" run status release; do
  # shellcheck disable=SC2086
  run_guard $sub --help
  expect_exit 0 "$sub --help"
  grep -q 'Usage' "$WORK/last.out" || fail "$sub --help prints no usage"
done
run_guard --version
expect_exit 0 "--version"
grep -q 'instance-guard' "$WORK/last.out" || fail "--version prints no version"
ok "--help on every subcommand and --version exit 0"
