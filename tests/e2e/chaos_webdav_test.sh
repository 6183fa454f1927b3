#!/usr/bin/env bash
# Chaos on Apache WebDAV: three `run --wait` loops SIGKILLed at random
# moments, 200 cycles per mode; no two children ever run at once. Apache has
# neither atomic conditional writes nor atomic locks, so exclusive is refused
# there (checked) and auto runs verify.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/webdav_lib.sh"
source "$(dirname "$0")/chaos_lib.sh"
CYCLES=${CHAOS_CYCLES:-200}
start_server apache apache.sh
run_guard run --store "webdav://${URL#http://}/refused" --mode exclusive -- true
expect_exit 78 "exclusive on Apache"
ok "exclusive on Apache refused: $(grep -o 'offers neither.*' "$WORK/last.err" | head -c 120)"
for mode in verify auto; do
  chaos_run "webdav://${URL#http://}/chaos-$mode" "$mode" "$CYCLES" --settle 0
done
