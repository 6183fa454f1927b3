#!/bin/bash
# A three-member etcd cluster (Debian's etcd-server, 3.4) on loopback, for
# the tests of the etcd store's failover.
#   etcd_cluster.sh start <dir>            starts members 1 to 3 in parallel;
#                                          prints their client URLs, one a line
#   etcd_cluster.sh stop <dir>             stops every member
#   etcd_cluster.sh stop-member <dir> <i> [KILL]
#                                          stops member i (TERM, as a shutdown;
#                                          KILL: as a crash), keeping its data
#   etcd_cluster.sh start-member <dir> <i> starts member i again on its ports
#                                          and data; waits until it serves
#                                          (which needs a majority up)
#   etcd_cluster.sh leader <dir>           prints the number of the leader
# Member i lives in <dir>/m<i> (data, etcd.log, server.pid, client.port,
# peer.port); the ports are chosen once, on the first start. Exits 77 when
# etcd is absent and cannot be installed. Binds 127.0.0.1 only. With
# WATCH_PID=<pid>, every member stops once that process is gone.
set -euo pipefail
. "$(dirname "$0")/common.sh"
cluster=$dir
members=(1 2 3)

client_url() { echo "http://127.0.0.1:$(cat "$cluster/m$1/client.port")"; }

# healthy I: member I says it has a leader and a read went through.
healthy() {
  curl -s --max-time 1 "$(client_url "$1")/health" 2>/dev/null | grep -q '"health":"true"'
}

# launch I: starts member I in the background (pid file m<I>/server.pid).
launch() {
  local i=$1 m="$cluster/m$1" initial="" j
  for j in "${members[@]}"; do
    initial+="${initial:+,}m$j=http://127.0.0.1:$(cat "$cluster/m$j/peer.port")"
  done
  local client peer
  client=$(client_url "$i")
  peer="http://127.0.0.1:$(cat "$m/peer.port")"
  pidf="$m/server.pid"
  stop_server
  # Detached from the caller's session, so a test's process-group signals
  # never reach it; the pid file is the only handle.
  setsid /usr/bin/etcd --name "m$i" --data-dir "$m/data" \
    --listen-client-urls "$client" --advertise-client-urls "$client" \
    --listen-peer-urls "$peer" --initial-advertise-peer-urls "$peer" \
    --initial-cluster "$initial" --initial-cluster-state new \
    --initial-cluster-token "instance-guard-test-$$" \
    --heartbeat-interval 50 --election-timeout 500 --logger zap \
    </dev/null >>"$m/etcd.log" 2>&1 &
  echo $! >"$pidf"
  start_watchdog
}

# wait_healthy I...: up to 10 s for every member named to serve.
wait_healthy() {
  local i pending=("$@") left
  for _ in $(seq 200); do
    left=()
    for i in "${pending[@]}"; do
      healthy "$i" || left+=("$i")
    done
    ((${#left[@]} == 0)) && return 0
    pending=("${left[@]}")
    sleep 0.05
  done
  echo "etcd members ${pending[*]} did not become healthy; see $cluster/m<i>/etcd.log" >&2
  for i in "${pending[@]}"; do tail -5 "$cluster/m$i/etcd.log" >&2 2>/dev/null || true; done
  return 1
}

stop_member() {
  pidf="$cluster/m$1/server.pid"
  if [[ ${2:-} == KILL && -f $pidf ]]; then
    local pid; pid=$(cat "$pidf")
    gone "$pid" || kill -KILL "$pid"
    for _ in $(seq 250); do gone "$pid" && break; sleep 0.02; done
    rm -f "$pidf"
  fi
  stop_server
}

case "$cmd" in
start)
  if ! [ -x /usr/bin/etcd ]; then
    need etcd-server etcd-client || true
    if ! [ -x /usr/bin/etcd ]; then
      echo "etcd is not installed (Debian packages etcd-server, etcd-client)" >&2
      exit 77
    fi
  fi
  # Six distinct free ports, chosen once: a member's peer URL is in its data.
  taken=" "
  for i in "${members[@]}"; do
    mkdir -p "$cluster/m$i"
    for kind in client peer; do
      if ! [ -s "$cluster/m$i/$kind.port" ]; then
        port=$(free_port)
        while [[ $taken == *" $port "* ]]; do port=$(free_port); done
        echo "$port" >"$cluster/m$i/$kind.port"
      fi
      taken+="$(cat "$cluster/m$i/$kind.port") "
    done
  done
  for i in "${members[@]}"; do launch "$i"; done
  if ! wait_healthy "${members[@]}"; then
    for i in "${members[@]}"; do stop_member "$i"; done
    # Nothing left behind: the next attempt may choose other ports.
    for i in "${members[@]}"; do rm -rf "$cluster/m$i/data" "$cluster/m$i/"*.port; done
    exit 1
  fi
  for i in "${members[@]}"; do client_url "$i"; done
  ;;
stop)
  for i in "${members[@]}"; do stop_member "$i"; done
  ;;
stop-member)
  stop_member "${3:?member number}" "${4:-}"
  ;;
start-member)
  launch "${3:?member number}"
  wait_healthy "$3"
  ;;
leader)
  # The member whose status names itself as the leader.
  for i in "${members[@]}"; do
    status=$(curl -s --max-time 1 -X POST "$(client_url "$i")/v3/maintenance/status" -d '{}' 2>/dev/null) || continue
    id=$(jq -r '.header.member_id // empty' <<<"$status")
    lead=$(jq -r '.leader // empty' <<<"$status")
    if [[ -n $id && $id == "$lead" ]]; then echo "$i"; exit 0; fi
  done
  exit 1
  ;;
*)
  echo "usage: $0 start|stop <dir> | stop-member <dir> <i> [KILL] | start-member <dir> <i> | leader <dir>" >&2
  exit 2
  ;;
esac
