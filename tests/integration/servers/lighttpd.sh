#!/bin/bash
# lighttpd + mod_webdav as a loopback WebDAV test server.
#   lighttpd.sh start <dir> <port>   prints the base URL; pid file <dir>/server.pid
#   lighttpd.sh stop  <dir>
# Documents live in <dir>/root. Binds 127.0.0.1 only; works as root (drops to
# www-data after binding) and as a normal user. Optional environment:
#   WATCH_PID=<pid>   stop the server when that process dies
# Without a mimetype.assign match lighttpd sends no ETag on GET, so every
# file gets one; the sqlite database is needed for PROPPATCH and LOCK.
set -euo pipefail
. "$(dirname "$0")/common.sh"

case "$cmd" in
start)
  port=${3:?port}
  if ! [ -x /usr/sbin/lighttpd ] || ! [ -f /usr/lib/lighttpd/mod_webdav.so ]; then
    need lighttpd lighttpd-mod-webdav
  fi
  mkdir -p "$dir/root" "$dir/db" "$dir/tmp" "$dir/logs"
  user_lines=""
  if [ "$(id -u)" = 0 ]; then
    user_lines=$'server.username = "www-data"\nserver.groupname = "www-data"'
    chown -R www-data:www-data "$dir/root" "$dir/db" "$dir/tmp" "$dir/logs"
    chmod a+x "$dir"
  fi
  cat >"$dir/lighttpd.conf" <<CONF
server.modules = ( "mod_webdav", "mod_accesslog" )
server.document-root = "$dir/root"
server.bind = "127.0.0.1"
server.port = $port
server.pid-file = "$pidf"
server.errorlog = "$dir/logs/error.log"
accesslog.filename = "$dir/logs/access.log"
server.upload-dirs = ( "$dir/tmp" )
server.max-keep-alive-requests = 10000
server.max-keep-alive-idle = 15
$user_lines
mimetype.assign = ( "" => "application/octet-stream" )
webdav.activate = "enable"
webdav.is-readonly = "disable"
webdav.sqlite-db-name = "$dir/db/webdav.sqlite"
CONF
  stop_server
  /usr/sbin/lighttpd -f "$dir/lighttpd.conf"
  finish_start lighttpd "$port" "$dir/logs/error.log"
  ;;
stop) stop_server ;;
*) echo "usage: $0 start <dir> <port> | stop <dir>" >&2; exit 2 ;;
esac
