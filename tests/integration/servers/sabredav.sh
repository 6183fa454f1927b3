#!/bin/bash
# sabre/dav (Debian php-sabre-dav) under `php -S` as a loopback WebDAV test
# server: the FSExt tree (content-hash ETags) and the Locks plugin.
#   sabredav.sh start <dir> <port>   prints the base URL; pid file <dir>/server.pid
#   sabredav.sh stop  <dir>
# Documents live in <dir>/root. Binds 127.0.0.1 only. Optional environment:
#   WATCH_PID=<pid>   stop the server when that process dies
#   SABRE_STOCK_LOCKS=1   the stock file lock backend (every lock 1800 s)
# `php -S` serves one request at a time. sabre/dav answers 404 (not 409) to a
# PUT under a missing folder. The stock file lock backend grants every lock
# 1800 s whatever was asked; the backend here keeps the Timeout asked (capped
# at 1800 s), so expiry can be tested.
set -euo pipefail
. "$(dirname "$0")/common.sh"

case "$cmd" in
start)
  port=${3:?port}
  if ! command -v php >/dev/null || ! [ -f /usr/share/php/Sabre/autoload.php ]; then
    need php-cli php-sabre-dav
  fi
  mkdir -p "$dir/root" "$dir/data"
  backend=TimeoutKeepingLocks
  [ "${SABRE_STOCK_LOCKS:-}" = 1 ] && backend='\Sabre\DAV\Locks\Backend\File'
  cat >"$dir/server.php" <<PHP
<?php
// sabre/dav 1.8 predates PHP 8: keep its deprecation notices out of replies.
error_reporting(E_ALL & ~E_DEPRECATED & ~E_USER_DEPRECATED & ~E_NOTICE);
ini_set('display_errors', '0');
ini_set('log_errors', '1');
ini_set('error_log', '$dir/php-error.log');
require_once '/usr/share/php/Sabre/autoload.php';
\$server = new \Sabre\DAV\Server(new \Sabre\DAV\FSExt\Directory('$dir/root'));
\$server->setBaseUri('/');
class TimeoutKeepingLocks extends \Sabre\DAV\Locks\Backend\File {
    public function lock(\$uri, \Sabre\DAV\Locks\LockInfo \$lockInfo) {
        \$t = (int)\$lockInfo->timeout;
        \$lockInfo->timeout = (\$t > 0 && \$t < 1800) ? \$t : 1800;
        \$lockInfo->created = time();
        \$lockInfo->uri = \$uri;
        \$locks = \$this->getData();
        foreach (\$locks as \$k => \$lock) {
            if (\$lock->token == \$lockInfo->token ||
                time() > \$lock->timeout + \$lock->created) unset(\$locks[\$k]);
        }
        \$locks[] = \$lockInfo;
        \$this->putData(\$locks);
        return true;
    }
}
\$server->addPlugin(new \Sabre\DAV\Locks\Plugin(new $backend('$dir/data/locks')));
\$server->exec();
PHP
  stop_server
  setsid php -S "127.0.0.1:$port" "$dir/server.php" </dev/null >"$dir/php-server.log" 2>&1 &
  echo $! >"$pidf"
  finish_start "php -S" "$port" "$dir/php-server.log"
  ;;
stop) stop_server ;;
*) echo "usage: $0 start <dir> <port> | stop <dir>" >&2; exit 2 ;;
esac
