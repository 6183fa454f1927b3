# Shared by the server scripts here: their arguments, package install, stop,
# watchdog. Sourced first; reads the script's own arguments, COMMAND DIR ...,
# into $cmd and $dir (made absolute, created), and sets $pidf.

cmd=${1:?usage: $(basename "$0") COMMAND DIR [PORT]}
dir=${2:?usage: $(basename "$0") COMMAND DIR [PORT]}
mkdir -p "$dir"; dir=$(cd "$dir" && pwd)
pidf="$dir/server.pid"
# free_port, the rule every test picks a port by.
source "$(dirname "${BASH_SOURCE[0]}")/../../support/shell.sh"

# Installs Debian packages when missing (apt-get update once on a fresh box).
need() {
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y --no-install-recommends "$@" >/dev/null 2>&1 ||
    { apt-get update >/dev/null && apt-get install -y --no-install-recommends "$@" >/dev/null; }
}

# Gone, or a zombie its new parent has yet to reap (its ports are free): a
# server detached from the script that started it is an orphan when it ends.
gone() { ! [[ $(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) =~ ^[^Z]$ ]]; }

# Stops the server named by $pidf: TERM, up to 5 s, then KILL.
stop_server() {
  [ -f "$pidf" ] || return 0
  local pid; pid=$(cat "$pidf")
  if [ -n "$pid" ] && ! gone "$pid"; then
    kill -TERM "$pid"
    for _ in $(seq 250); do gone "$pid" && break; sleep 0.02; done
    gone "$pid" || kill -KILL "$pid"
  fi
  rm -f "$pidf"
}

# With WATCH_PID set, stops the server once that process is gone (a test
# executable that crashed before its teardown), so no server outlives it.
start_watchdog() {
  [ -n "${WATCH_PID:-}" ] || return 0
  (
    while kill -0 "$WATCH_PID" 2>/dev/null && [ -f "$pidf" ]; do sleep 1; done
    stop_server
  ) </dev/null >/dev/null 2>&1 &
}

# Waits (10 s at most) until the server has written its pid file and
# accepts connections on 127.0.0.1:$1 (bash's /dev/tcp: no curl needed).
wait_ready() {
  local port=$1
  for _ in $(seq 100); do
    if [ -s "$pidf" ] && (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  return 1
}

# After a server was launched: waits until it answers on $2, starts the
# watchdog and prints its base URL ($4, default http://127.0.0.1:PORT). When
# it does not answer: shows the log file $3, stops it and exits 1. $1 names it.
finish_start() {
  local name=$1 port=$2 log=$3 url=${4:-http://127.0.0.1:$2}
  if ! wait_ready "$port"; then
    echo "$name failed to start; see $log" >&2
    cat "$log" >&2 2>/dev/null || true
    stop_server
    exit 1
  fi
  start_watchdog
  echo "$url"
}
