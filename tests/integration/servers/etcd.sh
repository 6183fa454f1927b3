#!/bin/bash
# etcd (Debian's etcd-server, 3.4) as a loopback test server.
#   etcd.sh start <dir> <port> [peer-port]   prints the client URL; pid file <dir>/server.pid
#   etcd.sh stop  <dir>
# Exits 77 when etcd is absent and cannot be installed.
# Data lives in <dir>/data and is kept by stop: starting the same <dir> again
# restarts the same member (same ports, same keys and leases), as a server
# restart in production would. Binds 127.0.0.1 only. Optional environment:
#   WATCH_PID=<pid>               stop the server when that process dies
#   ETCD_ROOT_PASSWORD=<pw>       on first start, add user root with this
#                                 password (through stdin) and enable auth
#   TLS_CERT=<pem> TLS_KEY=<pem>  serve clients over https with this pair
#   CLIENT_CA=<pem>               with TLS: demand client certificates signed by
#                                 this CA (--client-cert-auth); CLIENT_CERT and
#                                 CLIENT_KEY: the pair the readiness check shows
set -euo pipefail
. "$(dirname "$0")/common.sh"

case "$cmd" in
start)
  port=${3:?port}
  if ! [ -x /usr/bin/etcd ] || ! [ -x /usr/bin/etcdctl ]; then
    need etcd-server etcd-client || true
    if ! [ -x /usr/bin/etcd ] || ! [ -x /usr/bin/etcdctl ]; then
      echo "etcd is not installed (Debian packages etcd-server, etcd-client)" >&2
      exit 77
    fi
  fi
  # The peer port is chosen once and kept: the member's peer URL is in its data.
  if [ -n "${4:-}" ]; then echo "$4" >"$dir/peer.port"; fi
  if ! [ -s "$dir/peer.port" ]; then
    free_port >"$dir/peer.port"
  fi
  peer=$(cat "$dir/peer.port")
  fresh=""; [ -d "$dir/data" ] || fresh=1
  scheme=http
  tls=()
  if [ -n "${TLS_CERT:-}" ]; then
    scheme=https
    tls=(--cert-file "$TLS_CERT" --key-file "$TLS_KEY")
    if [ -n "${CLIENT_CA:-}" ]; then
      tls+=(--client-cert-auth --trusted-ca-file "$CLIENT_CA")
    fi
  fi
  client_pair=()
  if [ -n "${CLIENT_CA:-}" ]; then client_pair=(--cert "$CLIENT_CERT" --key "$CLIENT_KEY"); fi
  client="$scheme://127.0.0.1:$port"
  stop_server
  # Detached from the caller's session, so a test's process-group signals
  # never reach it; the pid file is the only handle.
  setsid /usr/bin/etcd --name test --data-dir "$dir/data" \
    --listen-client-urls "$client" --advertise-client-urls "$client" \
    --listen-peer-urls "http://127.0.0.1:$peer" --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
    --initial-cluster "test=http://127.0.0.1:$peer" --initial-cluster-state new \
    --heartbeat-interval 50 --election-timeout 500 --logger zap \
    "${tls[@]}" </dev/null >>"$dir/etcd.log" 2>&1 &
  echo $! >"$pidf"
  ctl=(env ETCDCTL_API=3 /usr/bin/etcdctl --endpoints "$client" --dial-timeout 1s --command-timeout 3s)
  [ -n "${TLS_CERT:-}" ] && ctl+=(--cacert "$TLS_CERT")
  ctl+=("${client_pair[@]}")
  ready=""
  for _ in $(seq 200); do
    gone "$(cat "$pidf")" && break
    # Ready once /health says so: a leader was elected and a read went through.
    if curl -s --max-time 1 ${TLS_CERT:+--cacert "$TLS_CERT"} "${client_pair[@]}" "$client/health" 2>/dev/null |
       grep -q '"health":"true"'; then
      ready=1; break
    fi
    sleep 0.05
  done
  if [ -z "$ready" ]; then
    echo "etcd failed to start; see $dir/etcd.log" >&2
    tail -20 "$dir/etcd.log" >&2 2>/dev/null || true
    stop_server
    # A first start that failed (a port taken meanwhile) leaves nothing
    # behind, so the next attempt may choose other ports.
    [ -z "$fresh" ] || rm -rf "$dir/data" "$dir/peer.port"
    exit 1
  fi
  if [ -n "${ETCD_ROOT_PASSWORD:-}" ] && ! [ -e "$dir/auth.enabled" ]; then
    printf '%s\n' "$ETCD_ROOT_PASSWORD" | "${ctl[@]}" user add root --interactive=false >/dev/null
    "${ctl[@]}" user grant-role root root >/dev/null
    "${ctl[@]}" auth enable >/dev/null
    touch "$dir/auth.enabled"
  fi
  start_watchdog
  echo "$client"
  ;;
stop) stop_server ;;
*) echo "usage: $0 start <dir> <port> [peer-port] | stop <dir>" >&2; exit 2 ;;
esac
