# Helpers for e2e tests that need a loopback WebDAV server (Apache httpd,
# lighttpd, nginx, rclone, sabre/dav or chezdav, from
# tests/integration/servers). Source after lib.sh; it replaces the EXIT trap
# so the servers are stopped before the scratch folder goes.
SERVERS=${INSTANCE_TESTS_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}/integration/servers
chmod a+x "$WORK"  # run as root, the servers' workers (www-data) must traverse it
STARTED=()
stop_servers() {
  local dir
  for dir in "${STARTED[@]}"; do bash "${dir%%|*}" stop "${dir#*|}" >/dev/null 2>&1 || true; done
}
trap 'stop_servers; cleanup' EXIT

# start_server NAME SCRIPT [PORT] [VAR=VALUE...]: starts a server in $WORK/NAME
# (on PORT, or a free one), with VAR=VALUE in the start script's environment
# (e.g. HTPASSWD=file); sets $URL and $PORT.
start_server() {
  local name=$1 script=$SERVERS/$2 port=""
  shift 2
  if [[ ${1:-} =~ ^[0-9]+$ ]]; then
    port=$1
    shift
  fi
  if ! start_server_script "$script" "$WORK/$name" "$port" "$@"; then
    cat "$WORK/$name.start.err" >&2
    fail "could not start $name"
  fi
  STARTED+=("$script|$WORK/$name")
}

# stop_server NAME SCRIPT: stops the server started as NAME.
stop_server() { bash "$SERVERS/$2" stop "$WORK/$1" >/dev/null 2>&1; }

# The directory-store behaviour, on a WebDAV URL. $1: server name, $2: the
# folder on disk the server serves, $3: store URL; any further arguments go to
# every `run` (e.g. --ttl).
check_run() {
  local name=$1 root=$2 store=$3 first
  shift 3
  local extra=("$@")
  start_guard "$name-first" run --store "$store" "${extra[@]}" --id first -- \
    bash -c "$(sleeper "$name-first")"
  first=$LAST_PID
  wait_until 10 test -f "$WORK/$name-first.started" ||
    fail "$name: the first guard's child did not start: $(cat "$WORK/$name-first.err")"

  run_guard run --store "$store" "${extra[@]}" --id second -- bash -c 'echo second ran'
  expect_exit 75 "$name: second run beside a live first"
  grep -q 'another instance of this service is running' "$WORK/last.err" || fail "$name: no refusal message"
  grep -q 'holder_id=first' "$WORK/last.err" || fail "$name: refusal does not name the first"
  [[ ! -s $WORK/last.out ]] || fail "$name: the second command ran"
  ok "$name: second run refused in ${ELAPSED_MS} ms"

  local record=$root/instances/first
  [[ -f $record ]] || fail "$name: no record at $record"
  jq -e '.id == "first" and (.started_at | test("Z$")) and (.expires_at | test("Z$"))' "$record" \
    >/dev/null || fail "$name: record not in the original's shape: $(cat "$record")"
  ok "$name: the record is on the server in the original's shape"

  kill -TERM "$first"
  wait_exit "$first" 10
  [[ $EXIT_CODE == 143 ]] || fail "$name: first guard exited $EXIT_CODE, expected 143"
  [[ ! -e $record ]] || fail "$name: the first's record is still there"

  run_guard run --store "$store" "${extra[@]}" --id second -- bash -c 'echo second ran'
  expect_exit 0 "$name: second run after the first stood down"
  grep -q 'second ran' "$WORK/last.out" || fail "$name: the second command did not run"
  ((ELAPSED_MS < 2000)) || fail "$name: second run took ${ELAPSED_MS} ms after the first exited"
  ok "$name: next run started at once (${ELAPSED_MS} ms) after the first exited"

  run_guard status --store "$store" --json
  expect_exit 0 "$name: status"
  [[ $(jq length "$WORK/last.out") == 0 ]] || fail "$name: records left: $(cat "$WORK/last.out")"
}
