#!/usr/bin/env bash
# Sharing a Space with the original service, which keeps its state in the
# folder `.backup-service-state` of its Space (docs/cs3.md, docs/webdav.md):
# a guard pointed at that folder, over CS3 (the gateway test double) and over
# WebDAV (lighttpd serving an OpenCloud-like /dav/spaces/<id>/ path), sees the
# original's live record and refuses (75) naming it; once that record has
# expired it claims, and its own record lands in
# `.backup-service-state/instances/` in the original's shape, live, where the
# original reads it. A guard left on the default folder sees nothing of the
# original: the folder must be given.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/webdav_lib.sh"

FOLDER=.backup-service-state

# original_record FILE SECONDS: writes a record as the original service
# does, expiring SECONDS from now (negative: already expired).
original_record() {
  mkdir -p "$(dirname "$1")"
  printf '{"id":"original-svc","started_at":"%s","expires_at":"%s"}' \
    "$(date -u -d '-1 min' +%Y-%m-%dT%H:%M:%SZ)" \
    "$(date -u -d "$2 sec" +%Y-%m-%dT%H:%M:%SZ)" >"$1"
}

# check_shared NAME STORE_URL STATE_DIR DEFAULT_URL [RUN ARGS...]: the
# sequence above; STATE_DIR is the folder on disk behind STORE_URL.
check_shared() {
  local name=$1 store=$2 state=$3 default=$4 record
  shift 4
  original_record "$state/instances/original-svc" 3600
  [[ -z ${OWNER:-} ]] || chown -R "$OWNER" "$state"

  run_guard run --store "$store" "$@" --id guard-1 -- bash -c 'echo should-not-run'
  expect_exit 75 "$name: a run beside the original's live record"
  grep -q 'holder_id=original-svc' "$WORK/last.err" ||
    fail "$name: the refusal does not name the original: $(cat "$WORK/last.err")"
  [[ ! -s $WORK/last.out ]] || fail "$name: the command ran beside the original"
  ok "$name: the guard sees the original's live record in $FOLDER and refuses"

  run_guard run --store "$default" "$@" --id guard-1 -- bash -c 'echo ran-elsewhere'
  expect_exit 0 "$name: a run on the default folder"
  grep -q ran-elsewhere "$WORK/last.out" || fail "$name: the command did not run"
  ok "$name: on the default folder the guard does not see the original (the folder must be given)"

  original_record "$state/instances/original-svc" -60
  [[ -z ${OWNER:-} ]] || chown -R "$OWNER" "$state"
  start_guard "$name-holder" run --store "$store" "$@" --id guard-1 -- bash -c "$(sleeper "$name-holder")"
  local holder=$LAST_PID
  wait_until 15 test -f "$WORK/$name-holder.started" ||
    fail "$name: the guard did not claim after the original's record expired: $(cat "$WORK/$name-holder.err")"
  record=$state/instances/guard-1
  [[ -f $record ]] || fail "$name: no record at $record"
  jq -e --arg now "$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
    '.id == "guard-1" and (.started_at | test("Z$")) and (.expires_at > $now)' "$record" >/dev/null ||
    fail "$name: the record is not live in the original's shape: $(cat "$record")"
  ok "$name: after the original's record expired the guard claims; its record is live in $FOLDER/instances"

  kill -TERM "$holder"
  wait_exit "$holder" 15
  [[ $EXIT_CODE == 143 ]] || fail "$name: the holder exited $EXIT_CODE, expected 143"
  [[ ! -e $record ]] || fail "$name: the guard's record is still there after it stood down"
  ok "$name: standing down removes the guard's record from $FOLDER"
}

# CS3: the gateway test double, the space's folder on disk.
DOUBLE=${CS3_GATEWAY_DOUBLE:-$(dirname "$BIN")/cs3-gateway-double}
if [[ -x $DOUBLE ]]; then
  start_server cs3 cs3.sh CS3_GATEWAY_DOUBLE="$DOUBLE" INSTANCE_GUARD_BIN="$BIN"
  read -r _ _ space <"$WORK/cs3/ports"
  space=${space#space=}
  export INSTANCE_GUARD_CS3_ID=guard-sa INSTANCE_GUARD_CS3_SECRET_FILE=$WORK/cs3/secret
  check_shared cs3 "$URL/$FOLDER" "$WORK/cs3/root/${space#*\$}/$FOLDER" "$URL"
  unset INSTANCE_GUARD_CS3_ID INSTANCE_GUARD_CS3_SECRET_FILE
else
  echo "SKIP (CS3 part): $DOUBLE not built: the CS3 store needs libgrpc++-dev and" \
    "protobuf-compiler-grpc (scripts/deps.sh installs them)"
fi

# WebDAV: the Space's WebDAV path as OpenCloud serves it (/dav/spaces/<id>/).
start_server lighttpd lighttpd.sh
space_id='storage-users-1$4c510ada-c86b-4815-8820-42cdf82c3d51'
mkdir -p "$WORK/lighttpd/root/dav/spaces/$space_id"
chown -R www-data:www-data "$WORK/lighttpd/root/dav"
spaces="webdav://${URL#http://}/dav/spaces/${space_id//\$/%24}"
OWNER=www-data:www-data check_shared webdav "$spaces/$FOLDER" \
  "$WORK/lighttpd/root/dav/spaces/$space_id/$FOLDER" "$spaces/.instance-guard"
