#!/bin/bash
# nginx (http_dav_module + dav_ext) as a loopback WebDAV test server.
#   nginx.sh start <dir> <port>   prints the base URL; pid file <dir>/server.pid
#   nginx.sh stop  <dir>
# Documents live in <dir>/root. Binds 127.0.0.1 only; works as root (workers
# run as www-data) and as a normal user. Optional environment:
#   WATCH_PID=<pid>          stop the server when that process dies
#   NGINX_LOCK_TIMEOUT=<n>s  the lock zone's timeout (default 4s). nginx grants
#                            it to every LOCK whatever Timeout was asked.
# nginx ignores If-Match and If-None-Match (no conditional writes).
set -euo pipefail
. "$(dirname "$0")/common.sh"

case "$cmd" in
start)
  port=${3:?port}
  if ! [ -x /usr/sbin/nginx ] || ! [ -f /usr/lib/nginx/modules/ngx_http_dav_ext_module.so ]; then
    need nginx libnginx-mod-http-dav-ext
  fi
  mkdir -p "$dir/root" "$dir/tmp" "$dir/logs"
  user_line=""
  if [ "$(id -u)" = 0 ]; then
    user_line="user www-data www-data;"
    chown -R www-data:www-data "$dir/root" "$dir/tmp"
    chmod a+x "$dir"
  fi
  cat >"$dir/nginx.conf" <<CONF
$user_line
load_module /usr/lib/nginx/modules/ngx_http_dav_ext_module.so;
worker_processes 1;
pid $pidf;
error_log $dir/logs/error.log;
events { worker_connections 256; }
http {
  access_log $dir/logs/access.log;
  client_body_temp_path $dir/tmp/body;
  proxy_temp_path $dir/tmp/proxy;
  fastcgi_temp_path $dir/tmp/fastcgi;
  uwsgi_temp_path $dir/tmp/uwsgi;
  scgi_temp_path $dir/tmp/scgi;
  keepalive_requests 100000;
  dav_ext_lock_zone zone=davlock:1m timeout=${NGINX_LOCK_TIMEOUT:-4s};
  server {
    listen 127.0.0.1:$port;
    root $dir/root;
    location / {
      dav_methods PUT DELETE MKCOL COPY MOVE;
      dav_ext_methods PROPFIND OPTIONS LOCK UNLOCK;
      dav_ext_lock zone=davlock;
      create_full_put_path on;
      dav_access user:rw group:rw all:r;
      client_max_body_size 0;
    }
  }
}
CONF
  stop_server
  /usr/sbin/nginx -p "$dir" -e "$dir/logs/error.log" -c "$dir/nginx.conf"
  finish_start nginx "$port" "$dir/logs/error.log"
  ;;
stop) stop_server ;;
*) echo "usage: $0 start <dir> <port> | stop <dir>" >&2; exit 2 ;;
esac
