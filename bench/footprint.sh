#!/usr/bin/env bash
# The tool's whole-process cost beside the tools it replaces, measured side
# by side in one run (interleaved, so a noisy machine slows both alike):
#
#   instance-guard --version                          (nothing but start-up)
#   instance-guard run --store DIR -- true   against  flock DIR/lock true
#   instance-guard run --store etcd://... -- true     etcdctl lock NAME true
#                                            against  (same etcd; when installed)
#   instance-guard run --store DIR -- sleep 2: peak RSS of an idle guard
#
# Wall time and CPU (user+system) are taken with bash's `time` over batches
# of 20 runs (the per-run cost is the batch's divided by 20: /usr/bin/time
# counts in 10 ms steps, coarser than a flock); the figure is the median
# batch of N (default 10) batches, interleaved. Peak RSS is /usr/bin/time's
# maximum resident set size, and voluntary context switches its %w (the
# process and the child it waited for), median of one run per batch. Prints a Markdown
# table with the ratios; BENCHMARKS.md quotes it.
#
#   bench/footprint.sh [BUILD_DIR] [N]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
n=${2:-10}
batch=20
bin=$build/instance-guard
[[ -x $bin ]] || { echo "build the tool first: $bin is missing" >&2; exit 1; }
[[ -x /usr/bin/time ]] || { echo "/usr/bin/time is missing (Debian package time)" >&2; exit 1; }
command -v flock >/dev/null || { echo "flock is missing (util-linux)" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/instance-guard-footprint.XXXXXX")
etcd_dir=""
cleanup() {
  [[ -n $etcd_dir ]] && bash "$root/tests/integration/servers/etcd.sh" stop "$etcd_dir" >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT
export XDG_STATE_HOME=$work/state
mkdir -p "$work/store"

# measure NAME CMD...: one batch; appends "wall_s cpu_s maxrss_kib switches"
# (per run) to $work/NAME.
measure() {
  local name=$1 i times
  shift
  /usr/bin/time -f '%M %w' -o "$work/$name.rss" "$@" >/dev/null 2>&1 ||
    { echo "failed: $*" >&2; "$@"; exit 1; }
  times=$( { TIMEFORMAT='%R %U %S'; time { for ((i = 0; i < batch; i++)); do "$@" >/dev/null 2>&1; done; }; } 2>&1)
  awk -v b="$batch" -v rss="$(cat "$work/$name.rss")" '{printf "%.5f %.5f %s\n", $1 / b, ($2 + $3) / b, rss}' \
    <<<"$times" >>"$work/$name"
}
# median NAME COLUMN: the median of a column (1 wall, 2 cpu, 3 rss, 4
# voluntary context switches).
median() {
  sort -g -k"$2" "$work/$1" | awk -v c="$2" '{v[NR] = $c} END {
    if (NR % 2) print v[(NR + 1) / 2]; else printf "%.5f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}

pairs=("version:" "guard_dir:flock_dir")
etcd_url=""
if [[ -x /usr/bin/etcd && -x /usr/bin/etcdctl ]]; then
  etcd_dir=$work/etcd
  mkdir -p "$etcd_dir"
  port=$((20000 + RANDOM % 40000))
  etcd_url=$(bash "$root/tests/integration/servers/etcd.sh" start "$etcd_dir" "$port")
  pairs+=("guard_etcd:etcdctl_lock")
fi

# The first claim in a new folder also makes its epoch reservation durable
# (fsync'd); every later one is what the table shows.
"$bin" run --store "$work/store" -- true >/dev/null 2>&1
for ((i = 0; i < n; i++)); do
  measure version "$bin" --version
  measure guard_dir "$bin" run --store "$work/store" -- true
  measure flock_dir flock "$work/store/lock" true
  if [[ -n $etcd_url ]]; then
    measure guard_etcd "$bin" run --store "etcd://${etcd_url#http://}/footprint" -- true
    measure etcdctl_lock env ETCDCTL_API=3 etcdctl --endpoints "$etcd_url" lock footprint true
  fi
done
for ((i = 0; i < 5; i++)); do
  /usr/bin/time -f '%M %w' -o "$work/idle.rss" "$bin" run --store "$work/store" -- sleep 2 2>/dev/null
  echo "2 0 $(cat "$work/idle.rss")" >>"$work/idle"
done

ms() { awk -v s="$1" 'BEGIN {print s * 1000}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (b > 0) printf "%.2fx", a / b; else print "-"}'; }
row() {  # row LABEL NAME [BASELINE]
  local w c r v lo hi
  w=$(median "$2" 1)
  c=$(median "$2" 2)
  r=$(median "$2" 3)
  v=$(median "$2" 4 | awk '{printf "%g", $1}')
  lo=$(sort -g -k4 "$work/$2" | head -1 | awk '{print $4}')
  hi=$(sort -g -k4 "$work/$2" | tail -1 | awk '{print $4}')
  if [[ -n ${3:-} ]]; then
    printf '| %s | %.1f ms (%s) | %.1f ms (%s) | %.1f MiB (%s) | %s (%s to %s) |\n' "$1" "$(ms "$w")" "$(ratio "$w" "$(median "$3" 1)")" \
      "$(ms "$c")" "$(ratio "$c" "$(median "$3" 2)")" "$(awk -v r="$r" 'BEGIN {print r / 1024}')" \
      "$(ratio "$r" "$(median "$3" 3)")" "$v" "$lo" "$hi"
  else
    printf '| %s | %.1f ms | %.1f ms | %.1f MiB | %s (%s to %s) |\n' "$1" "$(ms "$w")" "$(ms "$c")" \
      "$(awk -v r="$r" 'BEGIN {print r / 1024}')" "$v" "$lo" "$hi"
  fi
}
echo "Per run: medians of $n interleaved batches of $batch runs; ratios against the line below each guard line."
echo
echo "| command | wall | CPU (user+sys) | peak RSS | voluntary context switches (median, range) |"
echo "|---|---|---|---|---|"
row "\`instance-guard --version\`" version
row "\`instance-guard run --store DIR -- true\`" guard_dir flock_dir
row "\`flock DIR/lock true\`" flock_dir
if [[ -n $etcd_url ]]; then
  row "\`instance-guard run --store etcd://... -- true\`" guard_etcd etcdctl_lock
  row "\`etcdctl lock NAME true\`" etcdctl_lock
fi
row "idle \`run --store DIR -- sleep 2\` (peak RSS, 5 runs)" idle
