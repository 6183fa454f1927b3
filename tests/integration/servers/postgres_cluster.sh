#!/bin/bash
# A PostgreSQL primary and a streaming standby on loopback, for the tests of
# the PostgreSQL store's failover. Each member is a postgres.sh cluster:
# the primary in <dir>/primary, the standby in <dir>/standby, made from the
# primary by pg_basebackup -R (standby.signal and primary_conninfo).
#   postgres_cluster.sh start <dir> <primary port> <standby port> [sync|async]
#       starts both, waits until the standby streams; prints the two
#       postgres:// URLs, one a line. sync: the primary's commits wait for
#       the standby (synchronous_standby_names '*', synchronous_commit on);
#       async (the default): they do not (synchronous_commit off).
#   postgres_cluster.sh stop <dir>                 stops both
#   postgres_cluster.sh crash <dir> primary|standby
#       an immediate shutdown of that member (as a crash: no checkpoint,
#       clients cut off); its data is kept
#   postgres_cluster.sh promote <dir>              the standby becomes a primary
# The roles and passwords are postgres.sh's (AUTH_USER, AUTH_PASSWORD_FILE);
# with WATCH_PID=<pid>, both members stop once that process is gone. Exits 77
# when PostgreSQL is absent and cannot be installed.
set -euo pipefail
here=$(dirname "$0")
. "$here/common.sh"
primary=$dir/primary
standby=$dir/standby

bin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1; }
as_owner() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
sql() { # sql PORT SQL: one value
  "$(bin)/psql" -X -q -At -h 127.0.0.1 -p "$1" -U postgres -d postgres -c "$2"
}

case "$cmd" in
start)
  p1=${3:?primary port} p2=${4:?standby port} mode=${5:-async}
  [ "$mode" = sync ] && commit=on || commit=off
  SYNC_COMMIT=$commit bash "$here/postgres.sh" start "$primary" "$p1" >/dev/null
  # Replication connections from loopback, trusted as the others are.
  hba=$primary/data/pg_hba.conf
  grep -q '^host replication' "$hba" ||
    { echo "host replication all 127.0.0.1/32 trust" | as_owner tee -a "$hba" >/dev/null; }
  sql "$p1" "SELECT pg_reload_conf()" >/dev/null
  if ! [ -f "$standby/data/PG_VERSION" ]; then
    rm -rf "$standby"; mkdir -p "$standby"
    [ "$(id -u)" = 0 ] && chown postgres: "$standby" && chmod a+x "$standby"
    as_owner "$(bin)/pg_basebackup" -h 127.0.0.1 -p "$p1" -U postgres -D "$standby/data" -R \
      -X stream --no-sync -c fast >"$dir/basebackup.log" 2>&1 || { cat "$dir/basebackup.log" >&2; exit 1; }
  fi
  SYNC_COMMIT=$commit bash "$here/postgres.sh" start "$standby" "$p2" >/dev/null
  # Only now, so the standby's copy of the settings does not wait for a
  # standby of its own once promoted.
  if [ "$mode" = sync ]; then
    sql "$p1" "ALTER SYSTEM SET synchronous_standby_names = '*'" >/dev/null
    sql "$p1" "SELECT pg_reload_conf()" >/dev/null
  fi
  # Up to 20 s for the standby to stream (and, with sync, to be synchronous).
  want=streaming; [ "$mode" = sync ] && want=sync
  for _ in $(seq 200); do
    state=$(sql "$p1" "SELECT state || '/' || sync_state FROM pg_stat_replication" 2>/dev/null || true)
    case "$want:$state" in streaming:streaming/* | sync:streaming/sync) break ;; esac
    sleep 0.1
  done
  case "$want:$state" in
  streaming:streaming/* | sync:streaming/sync) ;;
  *) echo "the standby does not stream ($state); see $standby/logs/server.log" >&2; exit 1 ;;
  esac
  echo "postgres://127.0.0.1:$p1"
  echo "postgres://127.0.0.1:$p2"
  ;;
stop)
  bash "$here/postgres.sh" stop "$standby" || true
  bash "$here/postgres.sh" stop "$primary"
  ;;
crash)
  m=$dir/${3:?primary or standby}
  [ -f "$m/data/PG_VERSION" ] || { echo "no member $3" >&2; exit 2; }
  as_owner "$(bin)/pg_ctl" -D "$m/data" -m immediate -w -t 10 stop >/dev/null 2>&1 || true
  rm -f "$m/server.pid"
  ;;
promote)
  as_owner "$(bin)/pg_ctl" -D "$standby/data" -w -t 20 promote >/dev/null
  ;;
*)
  echo "usage: $0 start <dir> <port> <port> [sync|async] | stop <dir> | crash <dir> primary|standby | promote <dir>" >&2
  exit 2 ;;
esac
