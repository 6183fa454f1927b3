#!/usr/bin/env bash
# `instance-guard run` on a WebDAV store behaves as on the directory store,
# against Apache httpd (mod_dav) and lighttpd (mod_webdav) started here on
# 127.0.0.1: a second run is refused (75) while the first runs, the record is
# on the server in the original's shape, standing down removes it, the next
# run starts at once. With basic auth: wrong credentials exit 69 naming the
# URL, and no password appears in any output at debug level.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/webdav_lib.sh"

start_server apache apache.sh
check_run apache "$WORK/apache/root/state" "webdav://${URL#http://}/state"

start_server lighttpd lighttpd.sh
check_run lighttpd "$WORK/lighttpd/root/state" "webdav://${URL#http://}/state"

# Basic auth: credentials from a file or the environment, never shown.
password='e2e-Pw-4f9a#x'
printf '%s\n' "$password" | openssl passwd -apr1 -stdin | sed 's/^/guard:/' >"$WORK/htpasswd"
chmod 644 "$WORK/htpasswd"
start_server apache-auth apache.sh HTPASSWD="$WORK/htpasswd"
auth_store="webdav://${URL#http://}/state"
printf '%s\n' "$password" >"$WORK/password"
printf '%s\n' 'not-the-Pw-1' >"$WORK/wrong"

run_guard --log-level debug run --store "$auth_store" --user guard --password-file "$WORK/password" \
  --id a -- bash -c 'echo authorised'
expect_exit 0 "run with the right password file"
grep -q authorised "$WORK/last.out" || fail "the command did not run with the right password"
! grep -qF "$password" "$WORK/last.out" "$WORK/last.err" || fail "the password appears in the output"
ok "basic auth with --password-file works; the password is not in the debug output"

INSTANCE_GUARD_USER=guard INSTANCE_GUARD_PASSWORD=$password \
  run_guard --log-level debug run --store "$auth_store" --id a -- env
expect_exit 0 "run with credentials from the environment"
! grep -qF "$password" "$WORK/last.err" || fail "the password appears in the output"
expect_clean_child_env "$WORK/last.out" "$password"
ok "basic auth from the environment works; the child's environment holds no credential"

run_guard --log-level debug run --store "$auth_store" --user guard --password-file "$WORK/wrong" \
  --id a -- bash -c 'echo should-not-run'
expect_exit 69 "run with a wrong password"
grep -q '401' "$WORK/last.err" || fail "the error does not say 401: $(cat "$WORK/last.err")"
grep -qF "${URL#http://}" "$WORK/last.err" || fail "the error does not name the server"
! grep -qF 'not-the-Pw-1' "$WORK/last.err" "$WORK/last.out" || fail "the wrong password appears"
[[ ! -s $WORK/last.out ]] || fail "the command ran with a wrong password"
ok "a wrong password exits 69 naming the server, without the password"

run_guard run --store "webdav://guard:InUrl-Pw-83@${URL#http://}/state" -- bash -c 'echo no'
expect_exit 78 "a password in the URL"
! grep -qF "InUrl-Pw-83" "$WORK/last.err" || fail "the password in the URL is echoed"
ok "a password in the URL is refused and not echoed"
