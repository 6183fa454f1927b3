#!/usr/bin/env bash
# `run --metrics-file`, scraped through the real node_exporter (Debian's
# prometheus-node-exporter, its textfile collector only, on a loopback port
# of our own): while a claim is held the scrape says held 1, the mode, the
# epoch, renewals that went through and seconds left before the guard fences
# itself; once Apache (the store) is stopped under the holder, the claim is
# lost and the scrape says held 0 with the failed renewals counted. No stale
# temporary file is left for the collector.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/webdav_lib.sh"

exporter=$(command -v prometheus-node-exporter || true)
[[ -n $exporter ]] || fail "prometheus-node-exporter is not installed (scripts/deps.sh installs it)"

textfiles=$WORK/textfiles
mkdir -p "$textfiles"
metrics_port=$(free_port)
"$exporter" --collector.disable-defaults --collector.textfile \
  --collector.textfile.directory="$textfiles" \
  --web.listen-address="127.0.0.1:$metrics_port" >"$WORK/exporter.log" 2>&1 &
BG_PIDS+=("$!")
scrape() { curl -fsS --max-time 2 "http://127.0.0.1:$metrics_port/metrics" >"$WORK/scrape" 2>/dev/null; }
wait_until 10 scrape || fail "node_exporter did not answer: $(cat "$WORK/exporter.log")"

# The value of metric $1 for our id (and any further label in $2), or "".
value() {
  scrape || return 1
  awk -v m="$1" -v l="${2:-}" '$1 ~ "^" m "\\{" && index($1, "id=\"metrics\"") && index($1, l) { print $2 }' \
    "$WORK/scrape" | head -1
}
has() { [[ $(value "$1" "${3:-}") == "$2" ]]; }
at_least() { local v; v=$(value "$1" "${3:-}"); [[ -n $v ]] && (($(printf '%.0f' "$v") >= $2)); }

start_server apache apache.sh
store="webdav://${URL#http://}/state"
child='echo $$ >>"$WORK/pgids"; trap "exit 0" TERM; touch "$WORK/started"; sleep 300 & wait $!'
start_guard holder run --ttl 3s --id metrics --metrics-file "$textfiles/guard.prom" \
  --store "$store" -- bash -c "$child"
holder=$LAST_PID
wait_until 10 test -f "$WORK/started" || fail "the child did not start: $(cat "$WORK/holder.err")"

wait_until 5 has instance_guard_claim_held 1 || fail "no held 1 in the scrape: $(cat "$WORK/scrape")"
has instance_guard_claim_mode 1 'mode="' || fail "no mode in the scrape: $(cat "$WORK/scrape")"
mode=$(grep -o 'instance_guard_claim_mode{[^}]*mode="[a-z]*"' "$WORK/scrape" | sed 's/.*mode="//; s/"//')
[[ -n $(value instance_guard_claim_start_time_seconds) ]] || fail "no start time: $(cat "$WORK/scrape")"
# Renewals every ttl/3 = 1 s: two within 4 s, each moving the fence deadline on.
wait_until 4 at_least instance_guard_renewals_total 2 'result="renewed"' ||
  fail "fewer than two renewals scraped: $(cat "$WORK/scrape")"
fence=$(value instance_guard_fence_deadline_seconds)
[[ -n $fence ]] && awk -v f="$fence" 'BEGIN { exit !(f > 0 && f <= 3) }' ||
  fail "seconds until the fence deadline: '$fence', expected within (0, 3]"
has instance_guard_renewals_total 0 'result="failed"' || fail "failed renewals before the outage"
ok "held: scraped held 1, mode $mode, $(value instance_guard_renewals_total 'result="renewed"') renewals, ${fence} s before the fence"

stop_server apache apache.sh
wait_exit "$holder" 10
[[ $EXIT_CODE == 75 ]] || fail "the guard exited $EXIT_CODE after the store went away, expected 75"
wait_until 5 has instance_guard_claim_held 0 || fail "no held 0 after the loss: $(cat "$WORK/scrape")"
at_least instance_guard_renewals_total 1 'result="failed"' ||
  fail "the failed renewals were not counted: $(cat "$WORK/scrape")"
grep -q instance_guard_fence_deadline_seconds "$WORK/scrape" &&
  fail "a fence deadline is still shown for a lost claim"
leftovers=$(find "$textfiles" -name 'guard.prom.tmp*' | wc -l)
((leftovers == 0)) || fail "$leftovers temporary metrics files left behind"
ok "lost: scraped held 0, $(value instance_guard_renewals_total 'result="failed"') failed renewals"
