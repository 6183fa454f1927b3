# Helpers for the packaging tests (tests/packaging/*_test.sh), run by CTest
# from the build tree with INSTANCE_SOURCE_DIR, INSTANCE_BUILD_DIR,
# INSTANCE_GUARD_BIN, CMAKE_COMMAND and CPACK_COMMAND set. Each test works in
# its own scratch folder ($WORK), removed when it exits however it exits.
set -euo pipefail

: "${INSTANCE_SOURCE_DIR:?INSTANCE_SOURCE_DIR must name the source tree}"
: "${INSTANCE_BUILD_DIR:?INSTANCE_BUILD_DIR must name the build tree}"
CMAKE=${CMAKE_COMMAND:-cmake}
CPACK=${CPACK_COMMAND:-cpack}
SKIP=77  # the tests' SKIP_RETURN_CODE

WORK=$(mktemp -d "${TMPDIR:-/tmp}/instance-guard-pkg.XXXXXX")
# A test adds its own undo steps (e.g. removing a package) with on_exit.
EXIT_STEPS=()
on_exit() { EXIT_STEPS+=("$1"); }
cleanup() {
  local step
  for step in "${EXIT_STEPS[@]}"; do eval "$step" || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

unset INSTANCE_GUARD_STORE INSTANCE_GUARD_TTL INSTANCE_GUARD_ID INSTANCE_GUARD_MODE \
  INSTANCE_GUARD_USER INSTANCE_GUARD_PASSWORD INSTANCE_GUARD_TOKEN INSTANCE_GUARD_CS3_ID \
  INSTANCE_GUARD_CS3_SECRET INSTANCE_GUARD_CS3_SECRET_FILE
export XDG_STATE_HOME=$WORK/state

source "$(dirname "${BASH_SOURCE[0]}")/../support/shell.sh"  # fail, ok, wait_until, free_port

# run_logged LOG CMD...: runs CMD with its output in LOG, shown on failure.
run_logged() {
  local log=$1
  shift
  if ! "$@" >"$log" 2>&1; then
    cat "$log" >&2
    fail "$* failed"
  fi
}

# The records left in a directory store (none after a clean stand-down).
records_in() {
  [[ -d $1/instances ]] || return 0
  find "$1/instances" -type f
}
