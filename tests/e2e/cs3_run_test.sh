#!/usr/bin/env bash
# `instance-guard run --mode exclusive` on a CS3 store, against the CS3
# gateway test double (cs3-gateway-double: a real gRPC server plus an HTTP
# data endpoint, started here on 127.0.0.1; no OpenCloud server runs on the
# test machines): the claim uses CS3 locks, a second run is refused (75)
# naming the holder, the record is in the space in the original's shape,
# standing down frees the lock at once, a third run takes over with a larger
# epoch. Wrong credentials exit 69; no secret or token appears in any
# output at debug level; user info in the URL is refused (78).
source "$(dirname "$0")/lib.sh"

DOUBLE=${CS3_GATEWAY_DOUBLE:-$(dirname "$BIN")/cs3-gateway-double}
if [[ ! -x $DOUBLE ]]; then
  echo "SKIP: $DOUBLE not built: the CS3 store needs libgrpc++-dev and protobuf-compiler-grpc" \
    "(scripts/deps.sh installs them)"
  exit 0
fi

secret='e2e-Sa-Secret-91x'
printf '%s\n' "$secret" >"$WORK/secret"
printf '%s\n' 'not-the-Secret-2' >"$WORK/wrong"
mkdir -p "$WORK/cs3"
"$DOUBLE" --root "$WORK/cs3" --client-id guard-sa --secret-file "$WORK/secret" \
  --too-early-ms 5 >"$WORK/double.out" 2>"$WORK/double.err" &
BG_PIDS+=("$!")
wait_until 10 grep -q '^grpc_port=' "$WORK/double.out" ||
  fail "the gateway double did not start: $(cat "$WORK/double.err")"
read -r grpc http space < "$WORK/double.out"
grpc=${grpc#grpc_port=}
space=${space#space=}
STORE_URL="cs3://127.0.0.1:$grpc/$space/svc"
space_dir="$WORK/cs3/${space#*\$}"
export INSTANCE_GUARD_CS3_ID=guard-sa
export INSTANCE_GUARD_CS3_SECRET_FILE=$WORK/secret

start_guard first --log-level debug run --store "$STORE_URL" --mode exclusive --id first -- \
  bash -c "$(sleeper first)"
first=$LAST_PID
wait_until 15 test -f "$WORK/first.started" || fail "the first child did not start: $(cat "$WORK/first.err")"
grep -q 'mode=exclusive' "$WORK/first.err" || fail "not exclusive: $(cat "$WORK/first.err")"
grep -q "store's own lock" "$WORK/first.err" || fail "the claim does not use the CS3 lock: $(cat "$WORK/first.err")"
epoch1=$(grep -o 'epoch=[0-9]*' "$WORK/first.err" | head -1 | cut -d= -f2)
[[ -n $epoch1 ]] || fail "no epoch logged"
ok "exclusive claim with the CS3 lock, epoch $epoch1"

run_guard run --store "$STORE_URL" --mode exclusive --id second -- bash -c 'echo second ran'
expect_exit 75 "second run beside a live first"
grep -q 'holder_id=first' "$WORK/last.err" || fail "the refusal does not name the first: $(cat "$WORK/last.err")"
[[ ! -s $WORK/last.out ]] || fail "the second command ran"
ok "second run refused in ${ELAPSED_MS} ms"

record=$space_dir/svc/instances/first
[[ -f $record ]] || fail "no record at $record"
jq -e '.id == "first" and (.started_at | test("Z$")) and (.expires_at | test("Z$"))' "$record" \
  >/dev/null || fail "record not in the original's shape: $(cat "$record")"
ok "the record is in the space in the original's shape"

kill -TERM "$first"
wait_exit "$first" 15
[[ $EXIT_CODE == 143 ]] || fail "first guard exited $EXIT_CODE, expected 143"
[[ ! -e $record ]] || fail "the first's record is still there"

run_guard --log-level debug run --store "$STORE_URL" --mode exclusive --id third -- \
  bash -c 'echo "third ran $INSTANCE_GUARD_EPOCH"'
expect_exit 0 "third run after the first stood down"
epoch3=$(sed -n 's/^third ran //p' "$WORK/last.out")
((epoch3 > epoch1)) || fail "epoch did not grow: $epoch1 then '$epoch3'"
((ELAPSED_MS < 3000)) || fail "the third run took ${ELAPSED_MS} ms after the first exited"
ok "the next run took over at once (${ELAPSED_MS} ms) with epoch $epoch3"

run_guard run --store "$STORE_URL" --mode exclusive --id envcheck -- env
expect_exit 0 "run env on CS3"
expect_clean_child_env "$WORK/last.out" "$secret"
ok "the child's environment holds neither the service account nor its secret file"

# No secret or token in any output at debug level (tokens look like eyJ-access-).
for f in "$WORK"/first.err "$WORK"/first.out "$WORK"/last.err "$WORK"/last.out; do
  ! grep -qF "$secret" "$f" || fail "the secret appears in $f"
  ! grep -q 'eyJ-access-\|transfer-[0-9a-f]' "$f" || fail "a token appears in $f"
done
ok "no secret or token in the debug output"

run_guard run --store "$STORE_URL" --mode exclusive --password-file "$WORK/wrong" --id x -- \
  bash -c 'echo should-not-run'
expect_exit 69 "wrong service account secret"
grep -q 'refused the service account guard-sa' "$WORK/last.err" || fail "unclear error: $(cat "$WORK/last.err")"
! grep -qF 'not-the-Secret-2' "$WORK/last.err" || fail "the wrong secret is echoed"
[[ ! -s $WORK/last.out ]] || fail "the command ran with wrong credentials"
ok "a wrong secret exits 69 naming the service account, without the secret"

run_guard run --store "cs3://guard-sa:InUrl-Sa-3@127.0.0.1:$grpc/$space" -- bash -c 'echo no'
expect_exit 78 "credentials in the URL"
! grep -qF 'InUrl-Sa-3' "$WORK/last.err" || fail "the secret in the URL is echoed"
ok "credentials in the URL are refused and not echoed"
