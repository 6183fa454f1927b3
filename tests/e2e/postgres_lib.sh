# Helpers for e2e tests that need a PostgreSQL server: a private cluster
# (tests/integration/servers/postgres.sh) in $WORK/pg on a free port on
# 127.0.0.1, stopped when the test exits. Source after lib.sh; it replaces
# the EXIT trap so the cluster stops before the scratch folder goes.
# The cluster has a role `guard` whose password is in $PG_PASSWORD_FILE.
# Exits 0 with a SKIP line only when PostgreSQL is not installed.
SERVERS=${INSTANCE_TESTS_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}/integration/servers
chmod a+x "$WORK"  # as root, the cluster runs as the postgres user, which must traverse it
PG_DIR=$WORK/pg
PG_PASSWORD='e2e-Pg-pw-91d3'
PG_PASSWORD_FILE=$WORK/pg-password
printf '%s\n' "$PG_PASSWORD" >"$PG_PASSWORD_FILE"
trap 'bash "$SERVERS/postgres.sh" stop "$PG_DIR" >/dev/null 2>&1 || true; cleanup' EXIT

# pg_start: starts the cluster (made on the first call, kept after); sets
# $PG_PORT and $PG_URL (postgres://127.0.0.1:PORT/guard).
pg_start() {
  local attempt rc
  for attempt in 1 2 3; do
    PG_PORT=${PG_PORT:-$(free_port)}
    rc=0
    env WATCH_PID=$$ AUTH_USER=guard AUTH_PASSWORD_FILE="$PG_PASSWORD_FILE" \
      bash "$SERVERS/postgres.sh" start "$PG_DIR" "$PG_PORT" >"$WORK/pg.start.out" 2>&1 || rc=$?
    if ((rc == 0)); then
      PG_URL="postgres://127.0.0.1:$PG_PORT/guard"
      return 0
    fi
    if ((rc == 77)); then
      echo "SKIP: $(cat "$WORK/pg.start.out")"
      exit 0
    fi
    # A restart must keep its port; a first start that failed (postgres.sh
    # then removes the cluster) tries another.
    [[ -f $PG_DIR/data/PG_VERSION ]] && break
    unset PG_PORT
  done
  cat "$WORK/pg.start.out" >&2
  fail "could not start PostgreSQL"
}

# pg_stop: a fast shutdown (clients are disconnected).
pg_stop() { bash "$SERVERS/postgres.sh" stop "$PG_DIR" >/dev/null 2>&1; }

# pg_sql SQL: runs SQL as the superuser in database guard; prints the rows
# unaligned, without headers.
pg_sql() {
  local bin
  bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n1)
  "$bin/psql" -X -q -At -h 127.0.0.1 -p "$PG_PORT" -U postgres -d guard -c "$1"
}
