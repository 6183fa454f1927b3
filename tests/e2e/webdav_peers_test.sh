#!/usr/bin/env bash
# `instance-guard run` on rclone serve webdav and sabre/dav (php -S), which
# answer 404, not 409, to a PUT under a missing folder, and on chezdav, which
# answers 500: `--mode verify` works in a fresh folder (its self-test writes
# there first), and the directory-store behaviour holds. On rclone and
# chezdav: `status` never writes (no folder appears, capabilities are not
# probed), a store URL under a missing folder is refused (78) naming it unless
# --create-path (or INSTANCE_GUARD_CREATE_PATH=1) is given.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/webdav_lib.sh"

declare -A bases=()
for server in rclone sabredav chezdav; do
  start_server "$server" "$server.sh"
  base="webdav://${URL#http://}"
  bases[$server]=$base
  run_guard run --mode verify --store "$base/fresh" --id v -- bash -c 'echo verified'
  expect_exit 0 "$server: --mode verify in a fresh folder"
  grep -q verified "$WORK/last.out" || fail "$server: the command did not run"
  ok "$server: --mode verify works in a fresh folder"
  check_run "$server" "$WORK/$server/root/state" "$base/state"
done

# rclone and chezdav are still running: status is read-only, the path must
# exist.
for server in rclone chezdav; do
  root=$WORK/$server/root
  base=${bases[$server]}
  run_guard status --store "$base/unseen"
  expect_exit 0 "$server: status of a store folder that does not exist"
  grep -q 'not probed' "$WORK/last.out" ||
    fail "$server: status does not say it did not probe: $(cat "$WORK/last.out")"
  [[ ! -e $root/unseen ]] || fail "$server: status created the store's folder"
  ok "$server: status wrote nothing and says the capabilities were not probed"

  run_guard run --store "$base/misspelt/state" --id a -- bash -c 'echo should-not-run'
  expect_exit 78 "$server: a store URL under a missing folder"
  grep -q 'misspelt/ above the store' "$WORK/last.err" ||
    fail "$server: the refusal does not name the folder: $(cat "$WORK/last.err")"
  [[ ! -e $root/misspelt ]] || fail "$server: the missing folder was created"
  [[ ! -s $WORK/last.out ]] || fail "$server: the command ran"
  ok "$server: a store URL under a missing folder is refused (78) naming it"

  run_guard run --store "$base/made/by/flag" --create-path --id a -- bash -c 'echo ran'
  expect_exit 0 "$server: --create-path"
  [[ -d $root/made/by/flag ]] || fail "$server: --create-path made no folders"
  INSTANCE_GUARD_CREATE_PATH=1 run_guard run --store "$base/made2/deep" --id a -- bash -c 'echo ran'
  expect_exit 0 "$server: INSTANCE_GUARD_CREATE_PATH=1"
  [[ -d $root/made2/deep ]] || fail "$server: INSTANCE_GUARD_CREATE_PATH made no folders"
  ok "$server: --create-path and INSTANCE_GUARD_CREATE_PATH=1 create the missing folders"
done
