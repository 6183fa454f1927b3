#!/usr/bin/env bash
# The README's C++ example is examples/guard_a_folder.cpp, byte for byte, and
# that program (built by the test tree as guard_a_folder) does what the README
# says: it holds a folder until a line arrives on its standard input, a second
# instance is refused with 75 meanwhile, and once the first has stood down the
# next one holds at once, with a larger fencing epoch.
# Usage: readme_example_test.sh SOURCE_DIR GUARD_A_FOLDER_BINARY
set -euo pipefail
source_dir=$1
bin=$2
example=$source_dir/examples/guard_a_folder.cpp
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# The first ```cpp block of the README.
shown=$(awk '/^```cpp$/ {on = 1; next} on && /^```$/ {exit} on' "$source_dir/README.md")
[[ -n $shown ]] || fail "README.md has no \`\`\`cpp block"
if ! diff -u <(printf '%s\n' "$shown") "$example" >&2; then
  fail "README.md's C++ example differs from examples/guard_a_folder.cpp (above); copy one into the other"
fi

store=$(mktemp -d "${TMPDIR:-/tmp}/instance-guard-example.XXXXXX")
cleanup() {
  [[ -n ${first_PID:-} ]] && kill "$first_PID" 2>/dev/null || true
  rm -rf "$store"
}
trap cleanup EXIT

# The first instance holds until we write a line to it.
coproc first { "$bin" "$store" 2>&1; }
first_pid=$first_PID
read -r -t 20 -u "${first[0]}" line || fail "the first instance printed nothing within 20 s"
[[ $line == "holding: mode exclusive, epoch 1" ]] || fail "the first instance said: $line"

# A second one is refused, naming the store's holder.
status=0
err=$("$bin" "$store" </dev/null 2>&1 >/dev/null) || status=$?
((status == 75)) || fail "a second instance exited $status, not 75: $err"
[[ $err == *"another instance of this service is running"* ]] ||
  fail "the refusal does not say why: $err"

# The first stands down; the next holds at once, with the next epoch.
echo >&"${first[1]}"
wait "$first_pid" || fail "the first instance exited $? after standing down"
out=$(echo | "$bin" "$store" 2>&1) || fail "the next instance exited $?: $out"
[[ $out == "holding: mode exclusive, epoch 2" ]] || fail "the next instance said: $out"
records=$(find "$store/instances" -type f 2>/dev/null || true)
[[ -z $records ]] || fail "records left after standing down: $records"

status=0
"$bin" >/dev/null 2>&1 || status=$?
((status == 64)) || fail "without a folder the example exited $status, not 64"
echo "PASS: the README shows examples/guard_a_folder.cpp, which holds, refuses and hands over"
