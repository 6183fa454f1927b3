#!/usr/bin/env bash
# --log-format json writes one JSON object per line on stderr; --log-level
# filters; no credential from a store URL ever reaches stderr.
source "$(dirname "$0")/lib.sh"

run_guard --log-format json run --store "$STORE" -- true
expect_exit 0 "run with json logs"
[[ -s $WORK/last.err ]] || fail "no log lines at level info"
jq -e -s 'length > 0 and all(.[]; (.time | type == "string") and (.level | type == "string")
  and (.msg | type == "string"))' "$WORK/last.err" >/dev/null ||
  fail "stderr is not JSON lines: $(cat "$WORK/last.err")"
ok "json logs: $(wc -l <"$WORK/last.err") lines"

run_guard run --log-format json --log-level error --store "$STORE" -- true
expect_exit 0 "run with --log-level error (flags after the subcommand)"
[[ ! -s $WORK/last.err ]] || fail "--log-level error still logs: $(cat "$WORK/last.err")"
ok "--log-level error keeps a clean run quiet"

for url in 'webdav://alice:s3cr3t-pw@127.0.0.1:9/dav' 'webdavs://127.0.0.1:9/dav?token=s3cr3t-pw' \
  'file://alice:s3cr3t-pw@somewhere/x'; do
  run_guard --log-level debug run --store "$url" -- true
  [[ $EXIT_CODE != 0 ]] || fail "run against $url succeeded"
  if grep -q 's3cr3t-pw' "$WORK/last.err"; then fail "a secret reached stderr: $(cat "$WORK/last.err")"; fi
  run_guard --log-level debug status --store "$url"
  if grep -q 's3cr3t-pw' "$WORK/last.err" "$WORK/last.out"; then fail "status leaked a secret"; fi
done
ok "no secret from a store URL reaches stderr"
