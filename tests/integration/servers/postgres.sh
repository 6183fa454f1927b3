#!/bin/bash
# A private PostgreSQL cluster as a loopback test server.
#   postgres.sh start <dir> <port>   prints postgres://127.0.0.1:<port>; pid file <dir>/server.pid
#   postgres.sh stop  <dir>          fast shutdown (clients are disconnected)
# The cluster lives in <dir>/data and is made on the first start (initdb);
# a later start on the same <dir> reuses it, so stop + start is a server
# restart with the data kept. Binds 127.0.0.1 only (and a socket in
# <dir>/sock). PostgreSQL refuses to run as root: as root, the cluster is
# made and run by the `postgres` system user (created by the package).
# Roles: `postgres` (superuser) and, when another OS user runs this, a
# superuser of that name too, so libpq's default user works. Databases:
# `postgres` and `guard`. Local and loopback connections are trusted, except
# for the role named by AUTH_USER, which must give its password.
# Optional environment:
#   AUTH_USER=<name> AUTH_PASSWORD_FILE=<file>   make a login role that needs
#                                              this password (scram-sha-256)
#   WATCH_PID=<pid>                            stop the server when that process dies
#   SYNC_COMMIT=<value>                        synchronous_commit (default off)
#   FSYNC=on                                   fsync (default off): a durable server, to
#                                              measure what a commit costs on this disk
# Exits 77 when PostgreSQL is absent and cannot be installed (package
# `postgresql`), so a test can skip naming it.
# Test settings: initdb --no-sync, fsync off (a fast shutdown is still clean; only an OS crash
# would lose data, and the cluster is thrown away).
set -euo pipefail
. "$(dirname "$0")/common.sh"

# Fast shutdown (SIGINT): common.sh's SIGTERM is a smart shutdown, which
# waits for every client to disconnect.
stop_server() {
  [ -f "$pidf" ] || return 0
  local pid; pid=$(cat "$pidf")
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -INT "$pid"
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
  fi
  rm -f "$pidf"
}

bindir() {
  local d
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    [ -x "$d/postgres" ] && [ -x "$d/initdb" ] && { echo "$d"; return 0; }
  done
  return 1
}

# Runs a command as the cluster's owner.
as_owner() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

case "$cmd" in
start)
  port=${3:?port}
  bin=$(bindir) || { need postgresql || true; bin=$(bindir) || {
    echo "PostgreSQL is not installed (Debian package postgresql)" >&2; exit 77; }; }
  mkdir -p "$dir/sock" "$dir/logs"
  if [ "$(id -u)" = 0 ]; then
    id postgres >/dev/null 2>&1 || { echo "no postgres system user (package postgresql)" >&2; exit 77; }
    chown postgres: "$dir" "$dir/sock" "$dir/logs"
    chmod a+x "$dir"
  fi
  stop_server
  fresh=0
  if ! [ -f "$dir/data/PG_VERSION" ]; then
    fresh=1
    rm -rf "$dir/data"
    as_owner "$bin/initdb" -D "$dir/data" -U postgres --auth=trust --encoding=UTF8 --no-sync \
      --locale=C.UTF-8 >"$dir/logs/initdb.log" 2>&1 || {
      cat "$dir/logs/initdb.log" >&2; exit 1; }
    {
      [ -n "${AUTH_USER:-}" ] && echo "host all $AUTH_USER 127.0.0.1/32 scram-sha-256"
      echo "local all all trust"
      echo "host all all 127.0.0.1/32 trust"
    } >"$dir/data/pg_hba.conf"
  fi
  as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/logs/server.log" -w -t 20 \
    -o "-c listen_addresses=127.0.0.1 -p $port -k $dir/sock -c fsync=${FSYNC:-off} -c full_page_writes=${FSYNC:-off} -c synchronous_commit=${SYNC_COMMIT:-off} -c max_connections=200" \
    start >/dev/null || { echo "postgres failed to start; see $dir/logs/server.log" >&2;
      cat "$dir/logs/server.log" >&2 2>/dev/null || true
      # A cluster that never started was never set up: remove it, so a
      # caller may try again on another port (its port was taken, say).
      [ "$fresh" = 1 ] && rm -rf "$dir/data"
      exit 1; }
  head -n1 "$dir/data/postmaster.pid" >"$pidf"
  psql=("$bin/psql" -X -q -v ON_ERROR_STOP=1 -h "$dir/sock" -p "$port" -U postgres)
  if [ "$fresh" = 1 ]; then
    me=$(id -un)
    {
      echo "CREATE DATABASE guard;"
      [ "$me" != postgres ] && echo "CREATE ROLE \"$me\" SUPERUSER LOGIN;"
      if [ -n "${AUTH_USER:-}" ]; then
        # The password goes through stdin, never the command line.
        pw=$(cat "${AUTH_PASSWORD_FILE:?AUTH_PASSWORD_FILE}")
        echo "CREATE ROLE \"$AUTH_USER\" LOGIN PASSWORD '${pw//\'/\'\'}';"
        echo "GRANT ALL ON DATABASE guard TO \"$AUTH_USER\";"
        echo "\\c guard"
        echo "GRANT ALL ON SCHEMA public TO \"$AUTH_USER\";"
      fi
    } | as_owner "${psql[@]}" -d postgres >/dev/null || { stop_server; exit 1; }
  fi
  start_watchdog
  echo "postgres://127.0.0.1:$port"
  ;;
stop) stop_server ;;
*) echo "usage: $0 start <dir> <port> | stop <dir>" >&2; exit 2 ;;
esac
