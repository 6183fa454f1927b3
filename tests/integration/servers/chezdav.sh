#!/bin/bash
# GNOME's phodav (chezdav 3.0, Debian package chezdav) as a loopback WebDAV
# test server.
#   chezdav.sh start <dir> <port>   prints the base URL; pid file <dir>/server.pid
#   chezdav.sh stop  <dir>
# Documents live in <dir>/root. Binds 127.0.0.1 only (--local). Optional
# environment:
#   WATCH_PID=<pid>          stop the server when that process dies
#   HTDIGEST=<file>          require HTTP Digest auth against this htdigest
#                            file (user:realm:md5 lines), realm DIGEST_REALM
#   DIGEST_REALM=<realm>     default "instance-guard-test"
# What the suite relies on: chezdav ignores If-None-Match: * and If-Match
# (no conditional writes), its LOCKs are exclusive but never expire whatever
# Timeout it granted, it ends a lock with UNLOCK of its token from any client,
# it answers 500 (not 409) to a PUT under a missing folder, and it offers
# Digest authentication only.
set -euo pipefail
. "$(dirname "$0")/common.sh"

case "$cmd" in
start)
  port=${3:?port}
  command -v chezdav >/dev/null || need chezdav
  mkdir -p "$dir/root"
  args=(--local --no-mdns -p "$port" -P "$dir/root")
  if [ -n "${HTDIGEST:-}" ]; then
    args+=(-d "$HTDIGEST" --realm "${DIGEST_REALM:-instance-guard-test}")
  fi
  stop_server
  setsid chezdav "${args[@]}" </dev/null >"$dir/chezdav.log" 2>&1 &
  echo $! >"$pidf"
  finish_start chezdav "$port" "$dir/chezdav.log"
  ;;
stop) stop_server ;;
*) echo "usage: $0 start <dir> <port> | stop <dir>" >&2; exit 2 ;;
esac
