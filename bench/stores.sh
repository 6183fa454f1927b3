# The stores under test: bench/run.sh measures every store listed here.
# Sourced by bench/run.sh (after tests/e2e/lib.sh and webdav_lib.sh).
#
# Adding a store takes one line (plus, when its server is started by a shell
# function rather than a script in tests/integration/servers/, a `source` of
# the tests/e2e/<store>_lib.sh that defines it):
#
#   bench_store NAME START URL MODES [RUN_FLAGS...]
#
#   NAME       the store's name in the tables (one word)
#   START      how its server starts:
#                -       no server (a local store: shared between processes)
#                inproc  no server, and private to one process (memory:):
#                        measured in-process only (no hand-over, crash, idle)
#                X.sh    tests/integration/servers/X.sh, called as
#                        `X.sh start DIR PORT` (prints the server's URL; exit
#                        77 when the server is absent: the store is skipped,
#                        with the script's message) and `X.sh stop DIR`
#                NAME    a shell function with the same contract as X.sh
#                        (`NAME start DIR PORT`, `NAME stop DIR`)
#   URL        the store URL, in single quotes: expanded once the server is up,
#              with $SERVER_URL (what START printed), $HOSTPORT
#              (127.0.0.1:PORT) and $DIR (a scratch folder for this store)
#   MODES      the modes to measure, comma-separated (a mode the store cannot
#              do is reported as such, not failed)
#   RUN_FLAGS  extra flags for `instance-guard run` in the process-level
#              measurements (e.g. --settle 0)
#
# Credentials: define `bench_env_NAME` to export INSTANCE_GUARD_USER /
# INSTANCE_GUARD_PASSWORD (or whatever the store reads) after the server
# started; run.sh calls it when it exists ($DIR is set there too; the
# server's folder is $DIR/server), after clearing the previous store's. A
# store whose scheme this build leaves out (its library was not found) is
# skipped with a note.

source "$ROOT/tests/e2e/redis_lib.sh"  # redis_server: redis.sh, exit 77 when absent

bench_store memory    inproc      'memory:'                  announce,verify,exclusive
bench_store directory -           'file://$DIR/store'        announce,verify,exclusive
bench_store apache    apache.sh   'webdav://$HOSTPORT/bench' announce,verify,exclusive --settle 0
bench_store lighttpd  lighttpd.sh 'webdav://$HOSTPORT/bench' announce,verify,exclusive --settle 0
bench_store etcd      etcd.sh      'etcd://$HOSTPORT/bench'                  announce,verify,exclusive
bench_store redis     redis_server 'redis://$HOSTPORT'                       announce,verify,exclusive
bench_store postgres  postgres.sh  'postgres://$HOSTPORT/guard?table=bench'  announce,verify,exclusive
bench_store zookeeper zookeeper.sh 'zk://$HOSTPORT/bench'                    announce,verify,exclusive
# The CS3 gateway test double (no OpenCloud runs here): a gRPC server on its
# own port, so the URL is the one cs3.sh printed.
bench_store cs3       cs3.sh       '$SERVER_URL/bench'                       announce,verify,exclusive

# cs3.sh's service account (the double's secret is in its folder).
bench_env_cs3() {
  export INSTANCE_GUARD_CS3_ID=guard-sa INSTANCE_GUARD_CS3_SECRET_FILE=$DIR/server/secret
}
