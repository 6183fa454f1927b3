#!/usr/bin/env bash
# instance-guard(1) (docs/man/instance-guard.1) agrees with the tool:
# - each subcommand's SYNOPSIS block (.SY ... .YS) lists exactly the options
#   that subcommand's --help lists (plus the global ones);
# - every option any --help lists has a .TP entry, and every .TP entry names
#   an option some --help lists;
# - every [env: VAR] of --help (lists too), and every INSTANCE_GUARD_*
#   variable the code names (read, or given to the child), is under
#   ENVIRONMENT, and every variable there is read by the code;
# - every exit code of src/cli/exit_codes.hpp is under EXIT STATUS, and
#   nothing else but 128+N is;
# - every URL scheme open_store() knows is under STORE URLS, and no other;
# - .TH carries the version --version prints, and man renders it without
#   warnings.
source "$(dirname "$0")/lib.sh"
: "${INSTANCE_GUARD_BIN:?INSTANCE_GUARD_BIN must name the instance-guard binary}"
BIN=$INSTANCE_GUARD_BIN
MAN=$INSTANCE_SOURCE_DIR/docs/man/instance-guard.1
failures=0
problem() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# The text of section NAME (.SH NAME up to the next .SH), roff unescaped.
section() {
  awk -v name="$1" '/^\.SH / {on = ($0 == ".SH " name || $0 == ".SH \"" name "\"")} on' "$MAN" |
    sed 's/\\-/-/g'
}
# Options a --help defines: the first word(s) of its option lines.
help_options() {
  "$BIN" "$@" --help | grep -oE '^ +(-[a-zA-Z], ?)?--[a-z][a-z-]*' | grep -oE -- '--[a-z][a-z-]*' |
    sort -u
}
# The options in the synopsis block of subcommand $1.
synopsis_options() {
  awk -v sub_="$1" '/^\.SY/ {block = ""; on = 1} on {block = block "\n" $0}
    /^\.YS/ {on = 0; if (block ~ "\n\\.B " sub_ "\n") print block}' "$MAN" |
    sed 's/\\-/-/g' | grep -E '^\.(OP|B) --' | grep -oE -- '--[a-z][a-z-]*' | sort -u
}
same() {  # same WHAT EXPECTED ACTUAL
  local missing extra
  missing=$(comm -23 <(sort -u <<<"$2") <(sort -u <<<"$3") | xargs)
  extra=$(comm -13 <(sort -u <<<"$2") <(sort -u <<<"$3") | xargs)
  [[ -z $missing ]] || problem "$1: missing $missing"
  [[ -z $extra ]] || problem "$1: not in the tool: $extra"
}

# Options.
global=$(help_options | grep -vx -e --help -e --version)
all_options=$(help_options)
# The subcommands, as the tool's own --help lists them.
subcommands=$("$BIN" --help | sed -n '/^Subcommands:/,$p' | awk 'NR > 1 && NF {print $1}')
[[ -n $subcommands ]] || problem "no subcommands read from --help"
for sub in $subcommands; do
  expected=$( (help_options "$sub" | grep -vx -- --help; echo "$global") | sort -u)
  same "SYNOPSIS of $sub (against $sub --help)" "$expected" "$(synopsis_options "$sub")"
  all_options+=$'\n'$(help_options "$sub")
done
documented=$(awk 'prev == ".TP" {print} {prev = $0}' "$MAN" | sed 's/\\-/-/g' |
  grep -oE -- '--[a-z][a-z-]*' | sort -u)
same "options with a .TP entry (against every --help)" "$(sort -u <<<"$all_options")" "$documented"

# Environment.
# "[env: A]", "[env: A, B]", and "[env: X(_FILE)]" for X and X_FILE.
env_help=$(for sub in "" $subcommands; do "$BIN" $sub --help; done |
  grep -oE '\[env: [A-Z0-9_(), ]+\]' | sed -E 's/\[env: (.*)\]/\1/' | tr ',' '\n' |
  sed -E 's/^ +//; s/^([A-Z0-9_]+)\(([A-Z0-9_]+)\)$/\1\n\1\2/' | sort -u)
grep -qx INSTANCE_GUARD_PASSWORD <<<"$env_help" || problem "no [env: A, B] list read from --help"
env_man=$(section ENVIRONMENT | awk 'prev == ".TP" {print $2} {prev = $0}' | sort -u)
# Also every INSTANCE_GUARD_* variable the code names (read, or set for the
# child), with or without a --help entry.
# (instance/credentials.hpp names the credential variables for every store.)
code_dirs=("$INSTANCE_SOURCE_DIR/src" "$INSTANCE_SOURCE_DIR/include")
code_vars=$(grep -rhoE '"INSTANCE_GUARD_[A-Z0-9_]+"' "${code_dirs[@]}" | tr -d '"' | sort -u)
for var in $env_help $code_vars XDG_STATE_HOME HOME; do
  grep -qx "$var" <<<"$env_man" || problem "ENVIRONMENT lacks $var"
done
for var in $env_man; do
  grep -rqF "\"$var\"" "${code_dirs[@]}" || problem "ENVIRONMENT names $var, which no code reads"
done

# Exit codes.
codes_src=$(grep -oE 'kExit[A-Za-z]+ = [0-9]+' "$INSTANCE_SOURCE_DIR/src/cli/exit_codes.hpp" |
  grep -oE '[0-9]+$' | sort -u)
codes_man=$(section "EXIT STATUS" | awk 'prev == ".TP" {print $2} {prev = $0}' | sort -u)
same "EXIT STATUS (against src/cli/exit_codes.hpp)" "$codes_src"$'\n128+N' "$codes_man"

# Store URL schemes: every scheme open_store() knows (its error for an
# unknown one lists them) is under STORE URLS, and nothing else is.
status=0
"$BIN" status --store 'no-such-scheme://x' >/dev/null 2>"$WORK/err" || status=$?
[[ $status == 78 ]] || problem "an unknown scheme gave exit $status, want 78"
known=$(grep -oE '\(known: [^)]*' "$WORK/err" | sed 's/(known: //' |
  tr ',' '\n' | sed -E 's/^ +//; s/(:\/\/|:)$//')
[[ -n $known ]] || problem "open_store's error lists no schemes: $(cat "$WORK/err")"
urls=$(section "STORE URLS")
# A scheme is a word before "://", or a bold word ending in ':' (memory:);
# a colon in the prose is not one.
man_schemes=$( (grep -oE '(^|[^a-z])[a-z][a-z0-9+.-]*://' <<<"$urls"
  grep -oE '^\.BR? [a-z][a-z0-9+.-]*:( |$)' <<<"$urls") | grep -oE '[a-z][a-z0-9+.-]*:' |
  tr -d ':' | sort -u)
same "STORE URLS (against open_store's known schemes)" "$(sort -u <<<"$known")" "$man_schemes"

# Version and rendering.
version=$("$BIN" --version | awk '{print $2}')
grep -q "^\.TH .*\"instance-guard $version\"" "$MAN" || problem ".TH does not say instance-guard $version"
if command -v man >/dev/null; then
  MANWIDTH=80 man --warnings -E UTF-8 -l "$MAN" >/dev/null 2>"$WORK/warnings" || true
  [[ ! -s $WORK/warnings ]] || problem "man reports: $(cat "$WORK/warnings")"
fi

((failures == 0)) || exit 1
echo "PASS: the man page agrees with --help, the environment, the exit codes and the store URLs"
