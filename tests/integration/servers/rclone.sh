#!/bin/bash
# rclone serve webdav (golang.org/x/net/webdav) as a loopback WebDAV test server.
#   rclone.sh start <dir> <port>   prints the base URL; pid file <dir>/server.pid
#   rclone.sh stop  <dir>
# Documents live in <dir>/root. Binds 127.0.0.1 only. Optional environment:
#   WATCH_PID=<pid>   stop the server when that process dies
# rclone ignores If-Match and If-None-Match (no conditional writes), keeps
# locks in memory, and answers 404 (not 409) to a PUT under a missing folder.
set -euo pipefail
. "$(dirname "$0")/common.sh"

case "$cmd" in
start)
  port=${3:?port}
  command -v rclone >/dev/null || need rclone
  mkdir -p "$dir/root" "$dir/cache"
  : >"$dir/rclone.conf"  # an empty config: keeps rclone away from ~/.config
  stop_server
  setsid rclone serve webdav "$dir/root" --addr "127.0.0.1:$port" \
    --config "$dir/rclone.conf" --cache-dir "$dir/cache" \
    --log-file "$dir/rclone.log" --log-level NOTICE </dev/null >/dev/null 2>&1 &
  echo $! >"$pidf"
  finish_start rclone "$port" "$dir/rclone.log"
  ;;
stop) stop_server ;;
*) echo "usage: $0 start <dir> <port> | stop <dir>" >&2; exit 2 ;;
esac
