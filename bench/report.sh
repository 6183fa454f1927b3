#!/usr/bin/env bash
# Turns a run's results (bench/run.sh) into markdown tables and a plot.
#   report.sh OUT                      writes OUT/tables.md and OUT/stale_claims.png
#   report.sh OUT --update MD PNG      also puts the tables into MD between the
#                                      <!-- bench:begin --> and <!-- bench:end -->
#                                      markers and copies the plot to PNG
# Needs jq; gnuplot (gnuplot-nox) for the plot.
set -euo pipefail
OUT=${1:?results folder}
R=$OUT/results.jsonl
T=$OUT/tables.md
q() { jq -rs "$@" "$R"; }

{
  echo "### Stores"
  echo
  echo "| store | URL | conditional writes | native lease | auto runs |"
  echo "|---|---|---|---|---|"
  q '.[] | select(.kind == "store") |
     "| \(.store) | `\(.describe)` | \(.conditional_writes) | \(.native_lease) | \(.auto // "-") |"'
  q '.[] | select(.kind == "skipped") | "| \(.store) | skipped: \(.why) | | | |"'
  q '.[] | select(.kind == "mode" and (.supported | not)) |
     "\n\(.store), \(.mode): not possible here: \(.why)"'
  echo
  echo "### Requests per claim, renewal and release"
  echo
  echo "Store calls counted by \`CountingStore\`, no other record present; \"first\" is the first"
  echo "claim on the store (no lease document yet). Targets: announce no more than the original"
  echo "(1 listing, 1 read per record, 1 write); verify = announce + 1 listing with its reads (the"
  echo "records it lists, our own claiming record included) + 1 rewrite; exclusive claim at most 2,"
  echo "renewal 1."
  echo
  echo "| store | mode | claim | first claim | renewal | release | with 10 stale records: claim | target met |"
  echo "|---|---|---|---|---|---|---|---|"
  q 'def cell: "\(.total) (\(.counts | to_entries | map("\(.key) \(.value)") | join(", ")))";
     def find($s; $m; $p; $l; $n): map(select(.kind == "requests" and .store == $s and .mode == $m
       and .phase == $p and .lease == $l and .stale == $n)) | first;
     . as $all |
     [.[] | select(.kind == "requests")] | group_by([.store, .mode]) | .[] | .[0] as $x |
     ($all | find($x.store; $x.mode; "claim"; "released"; 0)) as $c |
     ($all | find($x.store; $x.mode; "claim"; "absent"; 0)) as $f |
     ($all | find($x.store; $x.mode; "renew"; "released"; 0)) as $r |
     ($all | find($x.store; $x.mode; "release"; "released"; 0)) as $d |
     ($all | find($x.store; $x.mode; "claim"; "released"; 10)) as $s10 |
     ($all | find($x.store; "announce"; "claim"; "released"; 0)) as $a |
     (if $x.mode == "announce" then ($c.total <= 2)
      elif $x.mode == "verify" then ($a == null or $c.total == $a.total + 3)
      else ($c.total <= 2 and $r.total <= 1) end) as $met |
     "| \($x.store) | \($x.mode) | \($c | cell) | \($f | cell) | \($r | cell) | \($d | cell) | \(if $s10 then ($s10 | cell) else "-" end) | \(if $met then "yes" else "**no**" end) |"'
  echo
  echo "verify's visibility self-test, once per process before its first claim:"
  q '.[] | select(.kind == "lag_check") | "\(.store): \(.total) calls (\(.counts | to_entries | map("\(.key) \(.value)") | join(", ")))"' |
    sed 's/^/- /'
  echo
  echo "### Claim latency"
  echo
  echo "Medians; \"ratio\" is claim latency / one bare request (a read of a small document) to the"
  echo "same store in the same rounds. Target on loopback WebDAV: ratio at most 3 with no other"
  echo "record; with 1000 stale records at most 10x the claim with none. (memory: a bare read takes"
  echo "0.1 us, so its ratio says nothing; directory: the bare read is a cached file read, and"
  echo "on a local file system the claim's writes are not synced: docs/design/arguments.md.)"
  echo "\"write ratio\" sets the claim against one bare write of a small document instead: a claim"
  echo "writes, and on a server that syncs each write (the test Redis: appendfsync always) a write"
  echo "costs that sync."
  echo
  echo "| store | mode | bare request (us) | bare write (us) | claim (us) | ratio | write ratio | claim, 10 stale (us) | 100 stale | 1000 stale | 1000 stale / none |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|"
  q 'def at($n): map(select(.stale == $n)) | first;
     def us: if . == null then "-" else (. * 10 | round / 10 | tostring) end;
     [.[] | select(.kind == "latency")] | group_by([.store, .mode]) | .[] |
     (at(0)) as $z | (at(10)) as $t | (at(100)) as $h | (at(1000)) as $k |
     "| \($z.store) | \($z.mode) | \($z.bare_us | us) | \($z.bare_write_us | us) | \($z.claim_us | us) | \($z.ratio * 10 | round / 10) | \(if $z.write_ratio then ($z.write_ratio * 10 | round / 10 | tostring) else "-" end) | \($t.claim_us | us) | \($h.claim_us | us) | \($k.claim_us | us) | \(if $k then (($k.claim_us / $z.claim_us) * 10 | round / 10 | tostring) + "x" else "-" end) |"'
  echo
  q '.[] | select(.kind == "connections") |
     "\(.store): the whole harness run sent \(.requests) HTTP requests over \(.connections) TCP connection(s) (from the server'"'"'s access log; Apache closes a connection after 10,000 requests): no new connection, TLS handshake or DNS look-up per request."'
  echo
  echo "### Hand-over with \`run --wait\`"
  echo
  echo "A holder runs; the other guards then start with \`--wait\`; each child runs 0.2 s. The gap"
  echo "from one child's exit to the next child's start; overlaps: a child that started while"
  echo "another ran (announce is not a lock: waiters that poll at the same moment can both win)."
  echo "Target: under 1 s."
  echo
  echo "| store | mode | gaps (ms) | median (ms) | max (ms) | overlaps |"
  echo "|---|---|---|---|---|---|"
  q '.[] | select(.kind == "handover") | "| \(.store) | \(.mode) | \(.gaps_ms | join(", ")) | \(.median_ms // "-") | \(.max_ms // "-") | \(.overlaps) |"'
  echo
  echo "### Crash take-over"
  echo
  echo "The holder (ttl 2s) is SIGKILLed while a \`--wait\` guard waits; from the kill to the"
  echo "waiting guard's child starting. \"Other host\": the holder runs under another host name, so"
  echo "only the ttl (plus max-skew, 0.2 s here) or the store's own lock frees the claim. Targets:"
  echo "within ttl + 1 s (3 s); at once on the same host."
  echo
  echo "| store | mode | other host (ms) | same host (ms) |"
  echo "|---|---|---|---|"
  q '[.[] | select(.kind == "takeover")] | group_by([.store, .mode]) | .[] |
     (map(select(.where == "other")) | first | .ms // "-") as $o |
     (map(select(.where == "same")) | first | .ms // "-") as $s |
     "| \(.[0].store) | \(.[0].mode) | \($o) | \($s) |"'
  echo
  echo "### Idle cost of \`instance-guard run --ttl 3s -- sleep\`"
  echo
  echo "Sampled from /proc every 2 ms (all threads). A wake-up between renewals is a burst of"
  echo "context switches with no renewal in it. Targets: peak RSS under 10 MiB, no wake-ups"
  echo "between renewals, under 1 ms CPU per renewal on the directory store."
  echo
  echo "| store | mode | seconds | renewals | peak RSS (KiB) | of it private (RssAnon) / shared libraries (RssFile) | CPU per renewal (us) | wake-ups between renewals | main thread among them |"
  echo "|---|---|---|---|---|---|---|---|---|"
  q '.[] | select(.kind == "idle") |
     "| \(.store) | \(.mode) | \(.seconds) | \(.renewals) | \(.peak_rss_kib) | \(.rss_anon_kib) / \(.rss_file_kib) | \(.cpu_us_per_renewal | round) | \(.wakeups_between_renewals) | \(.main_thread_wakes_between) |"'
  echo
  if [[ -s $OUT/micro.json ]]; then
    echo "### Micro-benchmarks"
    echo
    echo "| benchmark | ns per call |"
    echo "|---|---|"
    jq -r '.benchmarks[] | "| \(.name) | \(.cpu_time | round) |"' "$OUT/micro.json"
    echo
  fi
} >"$T"

# Claim latency against the number of stale records, one line per store and
# mode: a colour per store, a point shape per mode (+, circle, square).
if command -v gnuplot >/dev/null; then
  data=$OUT/stale.dat
  : >"$data"
  plots=()
  declare -A colour=() shape=([announce]=1 [verify]=6 [exclusive]=4)
  while IFS=$'\t' read -r store mode; do
    [[ -n ${colour[$store]:-} ]] || colour[$store]=$((${#colour[@]} + 1))
    echo "# $store $mode" >>"$data"
    jq -r --arg s "$store" --arg m "$mode" \
      'select(.kind == "latency" and .store == $s and .mode == $m) | "\(.stale + 0.5) \(.claim_us / 1000)"' "$R" >>"$data"
    printf '\n\n' >>"$data"
    plots+=("'$data' index ${#plots[@]} with linespoints lc ${colour[$store]} pt ${shape[$mode]:-2} title '$store $mode'")
  done < <(jq -r 'select(.kind == "latency") | [.store, .mode] | @tsv' "$R" | awk '!seen[$0]++')
  if ((${#plots[@]})); then
    gnuplot <<PLOT
set terminal png size 1000,700
set output '$OUT/stale_claims.png'
set title 'Claim latency against stale records present'
set xlabel 'stale records (+0.5, log scale)'
set ylabel 'median claim latency (ms, log scale)'
set logscale xy
set key outside right
set grid
plot $(IFS=,; echo "${plots[*]}")
PLOT
  fi
fi

if [[ ${2:-} == --update ]]; then
  md=$3 png=$4
  [[ -f $OUT/stale_claims.png ]] && cp "$OUT/stale_claims.png" "$png"
  awk -v tables="$T" '
    /<!-- bench:begin -->/ { print; while ((getline line < tables) > 0) print line; skip = 1; next }
    /<!-- bench:end -->/ { skip = 0 }
    !skip' "$md" >"$md.new"
  mv "$md.new" "$md"
fi
