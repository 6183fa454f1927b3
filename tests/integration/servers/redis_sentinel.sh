#!/bin/bash
# A Redis master, one replica and three Sentinels (Debian's redis-server and
# redis-sentinel) on loopback free ports, for the tests of the Redis store
# behind Sentinel.
#   redis_sentinel.sh start <dir>   starts them; prints the store URL
#                                   (redis+sentinel://.../mymaster)
#   redis_sentinel.sh stop <dir>    stops every server
#   redis_sentinel.sh crash <dir>   SIGKILL of the current master (the
#                                   Sentinels promote the replica within
#                                   about 1-3 s: down-after 400 ms)
#   redis_sentinel.sh master <dir>  prints the current master's port, as the
#                                   Sentinels name it
# Data servers in <dir>/r1, <dir>/r2 (redis.sh's layout, no persistence),
# Sentinels in <dir>/s1..s3 (sentinel.conf, sentinel.log, server.pid, port).
# Exits 3 when a package is missing and cannot be installed. With
# WATCH_PID=<pid>, every server stops once that process is gone.
set -euo pipefail
. "$(dirname "$0")/common.sh"
cluster=$dir
here=$(dirname "$0")
name=mymaster

sentinel_port() { cat "$cluster/s$1/port"; }

master_port() {
  local i reply
  for i in 1 2 3; do
    reply=$(redis-cli -p "$(sentinel_port "$i")" --raw sentinel get-master-addr-by-name "$name" 2>/dev/null) || continue
    [ -n "$reply" ] && { echo "$reply" | sed -n 2p; return 0; }
  done
  return 1
}

case "$cmd" in
start)
  if ! [ -x /usr/bin/redis-sentinel ]; then
    need redis-sentinel || true
    if ! [ -x /usr/bin/redis-sentinel ]; then
      echo "redis-sentinel is not installed (Debian package redis-sentinel; scripts/deps.sh)" >&2
      exit 3
    fi
  fi
  p1=$(free_port); p2=$(free_port)
  PERSIST=none "$here/redis.sh" start "$cluster/r1" "$p1" >/dev/null
  PERSIST=none "$here/redis.sh" start "$cluster/r2" "$p2" >/dev/null
  redis-cli -p "$p2" replicaof 127.0.0.1 "$p1" >/dev/null
  for _ in $(seq 100); do
    redis-cli -p "$p2" info replication | grep -q 'master_link_status:up' && break
    sleep 0.1
  done
  url="redis+sentinel://"
  for i in 1 2 3; do
    s="$cluster/s$i"; mkdir -p "$s"
    port=$(free_port); echo "$port" >"$s/port"
    cat >"$s/sentinel.conf" <<CONF
bind 127.0.0.1
port $port
daemonize yes
pidfile $s/server.pid
logfile $s/sentinel.log
dir $s
protected-mode no
sentinel monitor $name 127.0.0.1 $p1 2
sentinel down-after-milliseconds $name 400
sentinel failover-timeout $name 2000
sentinel parallel-syncs $name 1
CONF
    pidf="$s/server.pid"
    /usr/bin/redis-sentinel "$s/sentinel.conf"
    if ! wait_ready "$port"; then
      echo "redis-sentinel failed to start; see $s/sentinel.log" >&2
      cat "$s/sentinel.log" >&2 2>/dev/null || true
      exit 1
    fi
    start_watchdog
    [ "$i" -gt 1 ] && url+=","
    url+="127.0.0.1:$port"
  done
  # Ready when every Sentinel knows the replica and the other Sentinels.
  for i in 1 2 3; do
    for _ in $(seq 100); do
      info=$(redis-cli -p "$(sentinel_port "$i")" sentinel master "$name" 2>/dev/null | tr '\n' ' ')
      [[ $info =~ num-slaves\ 1\ .*num-other-sentinels\ 2 ]] && break
      sleep 0.1
    done
  done
  if [ -n "${WATCH_PID:-}" ]; then
    for r in r1 r2; do
      pidf="$cluster/$r/server.pid"; start_watchdog
    done
  fi
  echo "$url/$name"
  ;;
stop)
  for s in s1 s2 s3 r1 r2; do pidf="$cluster/$s/server.pid"; stop_server; done
  ;;
crash)
  port=$(master_port) || { echo "no Sentinel names a master" >&2; exit 1; }
  for r in r1 r2; do
    if [ -f "$cluster/$r/redis.conf" ] && grep -qx "port $port" "$cluster/$r/redis.conf"; then
      "$here/redis.sh" crash "$cluster/$r"
    fi
  done
  ;;
master) master_port ;;
*) echo "usage: $0 start|stop|crash|master <dir>" >&2; exit 2 ;;
esac
