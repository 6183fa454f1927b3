#!/bin/bash
# The CS3 gateway test double (cs3-gateway-double, tests/integration/cs3/double/:
# a gRPC gateway plus an HTTP data endpoint) as a loopback test server.
#   cs3.sh start <dir> <port>   prints the store URL cs3://127.0.0.1:<grpc port>/<space id>;
#                               pid file <dir>/server.pid
#   cs3.sh stop  <dir>
# The double picks its own free ports (gRPC and data): <port> is not used.
# Its files live in <dir>/root (the space is <dir>/root/<space>). The
# service account is `guard-sa`; its secret is in <dir>/secret (made on the
# first start). Exits 77 when the double was not built (the CS3 store needs
# gRPC: scripts/deps.sh). Optional environment:
#   CS3_GATEWAY_DOUBLE=<path>  the double; default: cs3-gateway-double beside
#                              $INSTANCE_GUARD_BIN (both are in the build folder)
#   TOO_EARLY_MS=<n>           answer 425 / CODE_TOO_EARLY for n ms after each
#                              upload (a real server's post-processing); default 0
#   WATCH_PID=<pid>            stop the server when that process dies
set -euo pipefail
. "$(dirname "$0")/common.sh"

case "$cmd" in
start)
  double=${CS3_GATEWAY_DOUBLE:-$(dirname "${INSTANCE_GUARD_BIN:-.}")/cs3-gateway-double}
  if ! [ -x "$double" ]; then
    echo "$double is not built: the CS3 store needs libgrpc++-dev and protobuf-compiler-grpc" \
      "(scripts/deps.sh installs them)" >&2
    exit 77
  fi
  stop_server
  mkdir -p "$dir/root"
  if ! [ -s "$dir/secret" ]; then
    (umask 077; printf 'sa-%s\n' "$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')" >"$dir/secret")
  fi
  rm -f "$dir/ports"
  # Detached from the caller's session, so a test's process-group signals
  # never reach it; the pid file is the only handle.
  setsid "$double" --root "$dir/root" --client-id guard-sa --secret-file "$dir/secret" \
    --too-early-ms "${TOO_EARLY_MS:-0}" </dev/null >"$dir/ports" 2>>"$dir/double.log" &
  echo $! >"$pidf"
  for _ in $(seq 250); do
    grep -q '^grpc_port=' "$dir/ports" 2>/dev/null && break
    gone "$(cat "$pidf")" && break
    sleep 0.02
  done
  if ! grep -q '^grpc_port=' "$dir/ports" 2>/dev/null; then
    echo "the CS3 gateway double failed to start; see $dir/double.log" >&2
    tail -20 "$dir/double.log" >&2 2>/dev/null || true
    stop_server
    exit 1
  fi
  # grpc_port=N http_port=M space=<storage>$<space>
  read -r grpc _ space <"$dir/ports"
  space=${space#space=}
  start_watchdog
  echo "cs3://127.0.0.1:${grpc#grpc_port=}/${space//\$/%24}"
  ;;
stop) stop_server ;;
*) echo "usage: $0 start <dir> <port> | stop <dir>" >&2; exit 2 ;;
esac
