#!/usr/bin/env bash
# Prints the Markdown tables of RELIABILITY.md's "Multi-host faults" from the
# checker reports (hosts-check --json) that scripts/hosts-long.sh keeps:
#   summary.sh RESULTS_DIR
# One row per store and phase (mode, or skew phase): fault cycles, cycles
# that hit the holder, overlaps after a pause and others (each with the
# longest), epochs that did not increase; then one row per
# store and fault kind, over every mode: how often the holder's child was
# stopped within the cycle, the time from the fault to that (fenced), to a
# child starting on another host (takeover), and from that stop to that
# start (handover; negative: the stale child of a paused host).
set -euo pipefail
dir=${1:?usage: summary.sh RESULTS_DIR}
command -v jq >/dev/null || { echo "jq is needed" >&2; exit 1; }

echo "| store | phase | fault cycles | hit the holder | overlaps after a pause (longest) | other overlaps (longest) | epoch regressions |"
echo "|---|---|---|---|---|---|---|"
for f in "$dir"/*.json; do
  name=$(basename "$f" .json)
  jq -r --arg store "${name%%-*}" --arg phase "${name#*-}" '
    "| \($store) | \($phase) | \(.faults | length) | \([.faults[] | select(.hit_holder)] | length) | " +
    "\(.overlaps - .unexpected_overlaps) (\(.longest_pause_overlap_ms | round) ms) | " +
    "\(.unexpected_overlaps) (\([.overlap_list[] | select(.after_pause | not) | .ms] | max // 0 | round) ms) | " +
    "\(.epoch_regressions) |"' "$f"
done

echo
echo "| store | fault | cycles on the holder | holder fenced | fenced min / median / max | takeover median / max | handover min / median / max |"
echo "|---|---|---|---|---|---|---|"
for store in $(ls "$dir"/*.json | xargs -n1 basename | cut -d- -f1 | sort -u); do
  jq -s -r --arg store "$store" '
    [.[].faults[] | select(.hit_holder)] | group_by(.fault)[] |
    . as $g |
    def vals(f): [ $g[] | f | select(. != null) ] | sort;
    def stat(f): vals(f) |
      if length == 0 then "-" else "\(.[length / 2 | floor] | round) / \(.[-1] | round) ms" end;
    def stat3(f): vals(f) |
      if length == 0 then "-" else "\(.[0] | round) / \(.[length / 2 | floor] | round) / \(.[-1] | round) ms" end;
    "| \($store) | \($g[0].fault) | \($g | length) | \(vals(.fenced_ms) | length) | \(stat3(.fenced_ms)) | " +
    "\(stat(.takeover_ms)) | \(stat3(.handover_ms)) |"
  ' $(ls "$dir/$store"-*.json | grep -v -- '-skew-')
done
