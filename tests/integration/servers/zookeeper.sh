#!/bin/bash
# ZooKeeper (Debian's zookeeper jars, standalone, on the installed JDK) as a
# loopback test server. Never the system service: its own config and data.
#   zookeeper.sh start <dir> <port>   prints the store URL; pid file <dir>/server.pid
#   zookeeper.sh stop  <dir>          SIGTERM
#   zookeeper.sh crash <dir>          SIGKILL
# A second `start` on the same <dir> and port restarts the server on the same
# data (its sessions and ephemeral nodes survive, as in production). Binds
# 127.0.0.1 only; the admin server is off. tickTime is 500 ms, so sessions
# may be as short as 1 s; jute.maxbuffer is raised to 4 MiB so a 1 MiB
# document fits in one request. Optional environment:
#   WATCH_PID=<pid>   stop the server when that process dies
# Exit status 77 when ZooKeeper or Java is missing and cannot be installed
# (Debian packages zookeeper, default-jre-headless).
set -euo pipefail
. "$(dirname "$0")/common.sh"

jar=/usr/share/java/zookeeper.jar
case "$cmd" in
start)
  port=${3:?port}
  if ! [ -f "$jar" ] || ! command -v java >/dev/null; then
    need zookeeper || true
    if ! [ -f "$jar" ] || ! command -v java >/dev/null; then
      echo "ZooKeeper is not installed (Debian package zookeeper; scripts/deps.sh)" >&2
      exit 77
    fi
  fi
  mkdir -p "$dir/data"
  cat >"$dir/zoo.cfg" <<CONF
tickTime=500
minSessionTimeout=1000
maxSessionTimeout=120000
dataDir=$dir/data
clientPort=$port
clientPortAddress=127.0.0.1
admin.enableServer=false
4lw.commands.whitelist=ruok,srvr,dump
CONF
  stop_server
  classpath=$jar
  [ -f /usr/share/java/slf4j-simple.jar ] && classpath+=:/usr/share/java/slf4j-simple.jar
  # Detached from the caller's session, so a test's process-group signals
  # never reach it; the pid file is the only handle.
  setsid java -Xmx256m -XX:TieredStopAtLevel=1 -Djute.maxbuffer=4194304 \
    -Dzookeeper.jmx.log4j.disable=true -Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
    -cp "$classpath" org.apache.zookeeper.server.ZooKeeperServerMain "$dir/zoo.cfg" \
    </dev/null >>"$dir/zookeeper.log" 2>&1 &
  echo $! >"$pidf"
  ready=""
  for _ in $(seq 400); do
    gone "$(cat "$pidf")" && break
    # Ready once `srvr` names its mode. Not `ruok`: the server answers
    # "imok" as soon as it accepts connections, before it has loaded its
    # data, and closes a session's connection until then ("not currently
    # serving requests"), so a client racing a restart would be refused.
    if (exec 3<>"/dev/tcp/127.0.0.1/$port" && echo srvr >&3 && timeout 1 cat <&3) 2>/dev/null | grep -q '^Mode: '; then
      ready=1; break
    fi
    sleep 0.05
  done
  if [ -z "$ready" ]; then
    echo "zookeeper failed to start; see $dir/zookeeper.log" >&2
    tail -20 "$dir/zookeeper.log" >&2 2>/dev/null || true
    stop_server
    exit 1
  fi
  start_watchdog
  echo "zk://127.0.0.1:$port"
  ;;
stop) stop_server ;;
crash)
  if [ -f "$pidf" ]; then
    pid=$(cat "$pidf")
    kill -KILL "$pid" 2>/dev/null || true
    for _ in $(seq 50); do gone "$pid" && break; sleep 0.1; done
    rm -f "$pidf"
  fi
  ;;
*) echo "usage: $0 start <dir> <port> | stop <dir> | crash <dir>" >&2; exit 2 ;;
esac
