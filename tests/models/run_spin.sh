#!/usr/bin/env bash
# Model-checks the claim protocols with spin (models/*.pml, see
# models/README.md), each in its own temporary folder:
#   verify, exclusive,  exhaustive search, must report `errors: 0` with the
#   native              state space fully explored (no depth truncation);
#   announce            must report errors > 0: spin finds the check-then-write
#                       race (shortest trail, breadth-first).
# Also runs verify with -DREAP_PLAIN (reaping with a plain remove, as on a store
# without conditional writes) and reports what spin finds, without failing.
#
# Usage: run_spin.sh [--write-counterexample]
#   --write-counterexample  also rewrites models/announce-counterexample.txt
#                           and models/verify-plain-reap-counterexample.txt
#                           from the trails (spin -t -p -g).
# Needs spin and gcc (scripts/deps.sh installs spin).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
models=$(cd "$here/../../models" && pwd)
write_trail=0
[[ ${1:-} == --write-counterexample ]] && write_trail=1

command -v spin >/dev/null || { echo "run_spin: spin is not installed (scripts/deps.sh)" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/instance-spin.XXXXXX")
trap 'rm -rf "$work"' EXIT

failures=0

# check <name> <model.pml> <expect: proof|counterexample|report> <spin -D flags> <pan cc flags> <pan run flags>
check() {
  local name=$1 model=$2 expect=$3 spin_defs=$4 cc_flags=$5 run_flags=$6
  local dir="$work/$name"
  mkdir -p "$dir"
  cp "$models"/*.pml "$dir/"
  local start end
  start=$(date +%s.%N)
  (cd "$dir" && spin $spin_defs -a "$model" >spin.out 2>&1) || {
    echo "FAIL $name: spin -a failed"; cat "$dir/spin.out"; failures=$((failures + 1)); return; }
  # pan.c triggers harmless -Wstringop-overflow noise from gcc 12: -w.
  (cd "$dir" && gcc -O2 -w -DSAFETY $cc_flags -o pan pan.c) || {
    echo "FAIL $name: gcc pan.c failed"; failures=$((failures + 1)); return; }
  (cd "$dir" && ./pan $run_flags >pan.out 2>&1) || true
  end=$(date +%s.%N)
  local out="$dir/pan.out"
  local errors states depth
  errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' "$out" | tail -1)
  states=$(sed -n 's/^ *\([0-9.e+]*\) states, stored.*/\1/p' "$out" | tail -1)
  depth=$(sed -n 's/.*depth reached \([0-9]*\).*/\1/p' "$out" | tail -1)
  local secs pan_secs
  secs=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
  pan_secs=$(sed -n 's/^pan: elapsed time \([0-9.e+-]*\) seconds.*/\1/p' "$out" | tail -1)
  local summary="$name: errors=${errors:-?} states=${states:-?} depth=${depth:-?} search=${pan_secs:-?}s total=${secs}s"
  if [[ -z $errors ]]; then
    echo "FAIL $summary (no verdict from pan)"; cat "$out"; failures=$((failures + 1)); return
  fi
  case $expect in
    proof)
      if ((errors != 0)); then
        echo "FAIL $summary: mutual exclusion violated"; (cd "$dir" && spin $spin_defs -t -p -g "$model" | tail -60)
        failures=$((failures + 1))
      elif grep -qE 'max search depth too small|Search not completed|hash table is full|out of memory' "$out"; then
        echo "FAIL $summary: the search did not cover the whole state space"; grep -E 'depth|Search|memory' "$out"
        failures=$((failures + 1))
      else
        echo "ok   $summary (full state space, no violation)"
      fi ;;
    counterexample)
      if ((errors == 0)); then
        echo "FAIL $summary: expected spin to find the check-then-write race"; failures=$((failures + 1))
      else
        echo "ok   $summary (counter-example found, as expected)"
      fi ;;
    report)
      if ((errors == 0)); then
        echo "note $summary (no violation)"
      else
        echo "note $summary (violation found; see models/README.md)"
      fi ;;
  esac
  if ((write_trail)) && ((errors > 0)) && [[ -f "$dir/$model.trail" ]]; then
    local dest="$models/$name-counterexample.txt"
    {
      narrative "$name"
      echo
      echo "Reproduce: tests/models/run_spin.sh --write-counterexample"
      echo "  (spin $spin_defs -a $model; gcc -DSAFETY $cc_flags pan.c; ./pan $run_flags; spin $spin_defs -t -p -g $model)"
      echo "Lines for the steps inside the atomic listing (DO, IF, goto, skip) are left out."
      echo
      (cd "$dir" && spin $spin_defs -t -p -g "$model" 2>&1) |
        grep -vE '\[(DO|IF|\.\(goto\)|\(1\)|goto :b[0-9]+|break)\]$'
    } >"$dest"
    echo "     wrote ${dest#"$models/../"}"
  fi
}

# What a counter-example shows, in words, for the top of its file.
narrative() {
  case $1 in
    announce) cat <<'TXT'
announce: spin's counter-example (check, then write; docs/design/modes.md, "announce")

Two guards (proc 1 = id 0, proc 2 = id 1), both starting with an empty instances/:
  steps 3-10   id 1 lists instances/ (nothing there) and passes its scan;
  steps 11-18  id 0 lists instances/ (still nothing: id 1 has not written yet) and passes;
  step 19      id 1 writes instances/1 and enters the critical section (cs = 1);
  step 21      id 0 writes instances/0 and enters it too (cs = 2): assertion violated.
Neither scan could see the other's record, because each guard writes only after it has
checked. This is the original's documented limit ("two processes starting at the same moment
can both read 'nobody there' and both write"); verify closes it by writing before the
decisive scan.
TXT
    ;;
    verify-plain-reap) cat <<'TXT'
verify with a plain-remove reap (-DREAP_PLAIN): spin's counter-example

Three guards (proc p = id p-1). Here id 2 is A, id 1 is B:
  step 13      A writes instances/2 as claiming, and crashes (14-15): the record stays, stale;
  steps 16-24  A restarts with the SAME id and passes its first scan (its own old record is
               skipped, whatever its state);
  step 31      A's old record expires;
  step 32      B, in its first scan, gets instances/2: expired, so it will reap it;
  steps 35-48  A writes a fresh claiming record, its second scan sees no one (B has not
               written), it marks itself held and enters the critical section (cs = 1);
  step 49      B's reap, a plain remove, deletes A's FRESH record;
  steps 54-67  B writes its claiming record, its second scan sees no one, it holds: cs = 2.
src/guard/records.cpp examine() removes with remove_if on the version read where the store
has conditional writes (the default verify.pml models that, and spin proves it safe), and with
a plain remove otherwise: exactly the stores verify is for. See models/README.md.
TXT
    ;;
  esac
}

# Breadth-first for the counter-examples: the shortest trail.
check announce announce.pml counterexample "" "-DBFS" ""
check verify verify.pml proof "" "-DCOLLAPSE" "-m3000000"
check exclusive exclusive.pml proof "" "-DCOLLAPSE" "-m3000000"
check native native.pml proof "" "-DCOLLAPSE" "-m3000000"
check verify-plain-reap verify.pml report "-DREAP_PLAIN" "-DBFS" ""

if ((failures)); then
  echo "run_spin: $failures check(s) failed"
  exit 1
fi
echo "run_spin: all checks passed"
