#!/bin/bash
# Apache httpd 2.4 + mod_dav + mod_dav_fs as a loopback WebDAV test server.
#   apache.sh start <dir> <port>   prints the base URL; pid file <dir>/server.pid
#   apache.sh stop  <dir>
# Documents live in <dir>/root. Binds 127.0.0.1 only; works as root (the
# workers then run as www-data) and as a normal user. Optional environment:
#   HTPASSWD=<file>          require HTTP basic auth against this htpasswd file
#   HTDIGEST=<file>          require HTTP Digest auth instead, against this
#                            htdigest file (user:realm:md5 lines), realm
#                            DIGEST_REALM (default "instance-guard-test")
#   TLS_CERT=<pem> TLS_KEY=<pem>   serve https with this certificate
#   WATCH_PID=<pid>          stop the server when that process dies
# ETags are FileETag Digest (strong, content hash): the default MTime Size
# ETag is weak for a second after each write, so If-Match would fail.
set -euo pipefail
. "$(dirname "$0")/common.sh"

case "$cmd" in
start)
  port=${3:?port}
  mods=/usr/lib/apache2/modules
  if ! [ -x /usr/sbin/apache2 ] || ! [ -f $mods/mod_dav_fs.so ]; then
    need apache2-bin   # binary and modules only: no system service is started
  fi
  mkdir -p "$dir/root" "$dir/lock" "$dir/run" "$dir/logs"
  user_lines=""
  if [ "$(id -u)" = 0 ]; then
    user_lines=$'User www-data\nGroup www-data'
    chown -R www-data:www-data "$dir/root" "$dir/lock"
    chmod a+x "$dir"
  fi
  auth_lines="Require all granted"
  if [ -n "${HTPASSWD:-}" ]; then
    auth_lines="AuthType Basic
  AuthName \"instance-guard test\"
  AuthBasicProvider file
  AuthUserFile \"$HTPASSWD\"
  Require valid-user"
  elif [ -n "${HTDIGEST:-}" ]; then
    auth_lines="AuthType Digest
  AuthName \"${DIGEST_REALM:-instance-guard-test}\"
  AuthDigestProvider file
  AuthUserFile \"$HTDIGEST\"
  Require valid-user"
  fi
  tls_lines="" scheme=http
  if [ -n "${TLS_CERT:-}" ]; then
    scheme=https
    tls_lines="LoadModule ssl_module $mods/mod_ssl.so
SSLEngine on
SSLCertificateFile \"$TLS_CERT\"
SSLCertificateKeyFile \"$TLS_KEY\""
  fi
  cat >"$dir/httpd.conf" <<CONF
ServerRoot "$dir"
DefaultRuntimeDir "$dir/run"
PidFile "$pidf"
Listen 127.0.0.1:$port
ServerName 127.0.0.1
$user_lines
LoadModule mpm_event_module $mods/mod_mpm_event.so
LoadModule authz_core_module $mods/mod_authz_core.so
LoadModule authz_user_module $mods/mod_authz_user.so
LoadModule authn_core_module $mods/mod_authn_core.so
LoadModule authn_file_module $mods/mod_authn_file.so
LoadModule auth_basic_module $mods/mod_auth_basic.so
LoadModule auth_digest_module $mods/mod_auth_digest.so
LoadModule dav_module $mods/mod_dav.so
LoadModule dav_fs_module $mods/mod_dav_fs.so
$tls_lines
ErrorLog "$dir/logs/error.log"
LogFormat "%h %t \"%r\" %>s %{remote}p" short
CustomLog "$dir/logs/access.log" short
StartServers 1
ServerLimit 1
ThreadsPerChild 16
MaxRequestWorkers 16
KeepAlive On
MaxKeepAliveRequests 10000
KeepAliveTimeout 15
DavLockDB "$dir/lock/DavLock"
DocumentRoot "$dir/root"
<Directory "$dir/root">
  Dav On
  FileETag Digest
  $auth_lines
</Directory>
CONF
  stop_server
  /usr/sbin/apache2 -f "$dir/httpd.conf" -k start
  finish_start apache "$port" "$dir/logs/error.log" "$scheme://127.0.0.1:$port"
  ;;
stop) stop_server ;;
*) echo "usage: $0 start <dir> <port> | stop <dir>" >&2; exit 2 ;;
esac
