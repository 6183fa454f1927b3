#!/usr/bin/env bash
# Every file under instances/ is a record to judge, whatever its name, as the
# original Go guard judges it: names that are not canonically escaped (a
# space, an escape of a safe byte, lowercase hex, '~', a newline, odd nested
# folders) are never an internal error (exit 70). A live or unreadable record
# refuses and names the file; an expired one is shown by `status`, does not
# refuse in any mode and is cleared in announce mode; a record with our own
# id is skipped whatever the file is called.
source "$(dirname "$0")/lib.sh"

future=$(date -u -d '+1 hour' +%Y-%m-%dT%H:%M:%SZ)
past=2026-03-01T12:02:00Z
record() { printf '{"id":"%s","started_at":"%s","expires_at":"%s"}' "$1" "$2" "$2"; }
# The key as the text log shows it (logfmt: JSON escapes, without the quotes).
shown() { printf '%s' "$1" | jq -Rs . | sed 's/^"//; s/"$//'; }

put() {  # put NAME BYTES: writes instances/NAME, folders included
  rm -rf "$STORE/instances"
  mkdir -p "$(dirname "$STORE/instances/$1")"
  printf '%s' "$2" >"$STORE/instances/$1"
}

names=("a b" "%41" "a%2f" "x~y" "sub/inner" "odd dir/z%" $'new\nline' "me%2D1" "%2e")
for name in "${names[@]}"; do
  label=$(shown "$name")
  key=$(shown "instances/$name")

  put "$name" "$(record other "$future")"
  run_guard run --store "$STORE" --id me-1 -- true
  expect_exit 75 "beside a live record in instances/$label"
  grep -qF "$key" "$WORK/last.err" || fail "the refusal does not name instances/$label"

  put "$name" '{"id":'
  run_guard run --store "$STORE" --id me-1 -- true
  expect_exit 75 "beside an unreadable record in instances/$label"
  grep -qF "$key" "$WORK/last.err" || fail "the refusal does not name instances/$label"

  put "$name" "$(record me-1 "$future")"
  run_guard run --store "$STORE" --id me-1 -- true
  expect_exit 0 "beside our own id's record in instances/$label"

  put "$name" "$(record other "$past")"
  run_guard status --store "$STORE" --json
  expect_exit 0 "status with an expired record in instances/$label"
  jq -e --arg key "instances/$name" \
    'map(select(.key == $key and .id == "other" and .live == false)) | length == 1' \
    "$WORK/last.out" >/dev/null || fail "status does not show instances/$label: $(cat "$WORK/last.out")"
  for mode in verify exclusive; do
    run_guard run --store "$STORE" --id me-1 --mode "$mode" -- true
    expect_exit 0 "$mode over an expired record in instances/$label"
  done
  put "$name" "$(record other "$past")"
  run_guard run --store "$STORE" --id me-1 --mode announce -- true
  expect_exit 0 "announce over an expired record in instances/$label"
  [[ ! -e $STORE/instances/$name ]] || fail "announce left the expired instances/$label"
  ok "instances/$label: live and unreadable refuse, our own id is skipped, expired is cleared"
done

# Not canonical, but exactly our own canonical name's twin: both judged.
put "me-1" "$(record other "$past")"
printf '%s' "$(record other "$future")" >"$STORE/instances/me%2D1"
run_guard run --store "$STORE" --id me-1 -- true
expect_exit 75 "beside a live record in instances/me%2D1 next to instances/me-1"
ok "a file whose name decodes to our own key is still judged by its contents"

# Not regular files: never an internal error, never taken over.
rm -rf "$STORE/instances"
mkdir -p "$STORE/instances"
mkfifo "$STORE/instances/fifo"
run_guard run --store "$STORE" --id me-1 -- true
expect_exit 75 "beside a FIFO under instances/ (unreadable, so live)"
rm "$STORE/instances/fifo"
ln -s /etc/hostname "$STORE/instances/link"
run_guard run --store "$STORE" --id me-1 -- true
expect_exit 69 "beside a symbolic link under instances/ (the store refuses links)"
ok "a FIFO refuses as an unreadable record; a symbolic link makes the store unusable (69)"
