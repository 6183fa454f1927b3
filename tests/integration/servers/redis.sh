#!/bin/bash
# redis-server as a loopback test server.
#   redis.sh start <dir> <port>   prints the store URL; pid file <dir>/server.pid
#   redis.sh stop  <dir>          SIGTERM: Redis flushes what its persistence keeps
#   redis.sh crash <dir>          SIGKILL: only what was already on disk survives
# A second `start` on the same <dir> (and port) restarts the server on the
# same data. Binds 127.0.0.1 only. Data in <dir>/data. Optional environment:
#   PERSIST=aof|none   aof (default): appendonly yes, appendfsync always, so
#                      every acknowledged write survives a stop or a crash;
#                      none: no AOF, no RDB, a restart starts empty
#   REDIS_PASSWORD_FILE=<file>  require this password (requirepass, put in
#                      the config file, never on a command line)
#   REDIS_ACL_USER=<name>  with REDIS_PASSWORD_FILE: that user, not the default one
#   WATCH_PID=<pid>    stop the server when that process dies
# Exit status 3 when redis-server is missing and cannot be installed
# (Debian package redis-server).
set -euo pipefail
. "$(dirname "$0")/common.sh"

case "$cmd" in
start)
  port=${3:?port}
  if ! [ -x /usr/bin/redis-server ]; then
    need redis-server || true
    if ! [ -x /usr/bin/redis-server ]; then
      echo "redis-server is not installed (Debian package redis-server; scripts/deps.sh)" >&2
      exit 3
    fi
  fi
  mkdir -p "$dir/data"
  persist=${PERSIST:-aof}
  case "$persist" in
  aof) persistence=$'appendonly yes\nappendfsync always' ;;
  none) persistence='appendonly no' ;;
  *) echo "PERSIST must be aof or none" >&2; exit 2 ;;
  esac
  auth=""
  if [ -n "${REDIS_PASSWORD_FILE:-}" ]; then
    password=$(head -n1 "$REDIS_PASSWORD_FILE")
    if [ -n "${REDIS_ACL_USER:-}" ]; then
      auth="user default off
user ${REDIS_ACL_USER} on >${password} ~* &* +@all"
    else
      auth="requirepass \"${password}\""
    fi
  fi
  (
    umask 077  # the config may hold the password
    cat >"$dir/redis.conf" <<CONF
bind 127.0.0.1
port $port
daemonize yes
pidfile $pidf
logfile $dir/redis.log
dir $dir/data
save ""
$persistence
protected-mode no
$auth
CONF
  )
  stop_server
  /usr/bin/redis-server "$dir/redis.conf"
  if ! wait_ready "$port"; then
    echo "redis-server failed to start; see $dir/redis.log" >&2
    cat "$dir/redis.log" >&2 2>/dev/null || true
    stop_server
    exit 1
  fi
  # One watchdog per folder, across restarts: common.sh's ends when the pid
  # file goes, and a restart removes it for a moment.
  if [ -n "${WATCH_PID:-}" ] && ! { [ -f "$dir/watchdog.pid" ] && kill -0 "$(cat "$dir/watchdog.pid")" 2>/dev/null; }; then
    (
      while kill -0 "$WATCH_PID" 2>/dev/null && [ -d "$dir" ]; do sleep 1; done
      stop_server
    ) </dev/null >/dev/null 2>&1 &
    echo $! >"$dir/watchdog.pid"
  fi
  echo "redis://127.0.0.1:$port"
  ;;
stop) stop_server ;;
crash)
  if [ -f "$pidf" ]; then
    pid=$(cat "$pidf")
    kill -KILL "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    rm -f "$pidf"
  fi
  ;;
*) echo "usage: $0 start <dir> <port> | stop <dir> | crash <dir>" >&2; exit 2 ;;
esac
