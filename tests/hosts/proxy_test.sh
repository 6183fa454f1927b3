#!/usr/bin/env bash
# hosts-fault-proxy on its own, between curl and lighttpd on 127.0.0.1: each
# fault does what the harness relies on. pass: the file arrives intact;
# delay 300: a GET (two round trips through the proxy) takes at least 600 ms;
# slow 100000: 200 kB take at least 1.5 s; stall: a GET gets nothing in 1 s,
# then completes after `pass`; reset: an open connection is reset; an unknown
# command is refused.
source "$(dirname "$0")/hosts_lib.sh"

start_server_script "$SERVERS/lighttpd.sh" "$WORK/lighttpd" "" ||
  fail "lighttpd did not start: $(cat "$WORK/lighttpd.start.err")"
SERVER_STOPS+=("$SERVERS/lighttpd.sh|$WORK/lighttpd")
port=$PORT
proxy_port=$(free_port)
head -c 200000 /dev/urandom >"$WORK/lighttpd/root/blob"
chmod 644 "$WORK/lighttpd/root/blob"
"$HOSTS_PROXY" --control "$WORK/p.sock" --forward "127.0.0.1:$proxy_port=127.0.0.1:$port" \
  >"$WORK/p.out" 2>"$WORK/p.err" &
BG_PIDS+=("$!")
wait_until 10 grep -q ready "$WORK/p.out" || fail "the proxy did not start: $(cat "$WORK/p.err")"
url=http://127.0.0.1:$proxy_port/blob

# get NAME: fetches through the proxy (10 s at most); sets $ELAPSED_MS, checks the bytes.
get() {
  local start
  start=$(now_ms)
  curl -sf --max-time 10 -o "$WORK/got" "$url" || fail "$1: the GET through the proxy failed"
  ELAPSED_MS=$(($(now_ms) - start))
  cmp -s "$WORK/got" "$WORK/lighttpd/root/blob" || fail "$1: the bytes changed on the way"
}

get pass
ok "pass: 200 kB intact in $ELAPSED_MS ms"
"$HOSTS_PROXY" --send "$WORK/p.sock" "delay 300" >/dev/null
get delay
((ELAPSED_MS >= 600)) || fail "delay 300: the GET took $ELAPSED_MS ms"
ok "delay 300: $ELAPSED_MS ms"
"$HOSTS_PROXY" --send "$WORK/p.sock" "slow 100000" >/dev/null
get slow
((ELAPSED_MS >= 1500)) || fail "slow 100000: 200 kB took $ELAPSED_MS ms"
ok "slow 100000: $ELAPSED_MS ms for 200 kB"

"$HOSTS_PROXY" --send "$WORK/p.sock" stall >/dev/null
! curl -sf --max-time 1 -o /dev/null "$url" || fail "stall: a GET went through"
curl -sf --max-time 10 -o "$WORK/got" "$url" &
stalled=$!
sleep 0.5  # the GET is waiting on the stalled proxy
"$HOSTS_PROXY" --send "$WORK/p.sock" pass >/dev/null
wait "$stalled" || fail "stall: the waiting GET did not complete after pass"
ok "stall: nothing goes through; a waiting GET completes after pass"

# reset: a connection held open (bash's /dev/tcp), idle, is reset.
exec 3<>"/dev/tcp/127.0.0.1/$proxy_port"
wait_until 5 bash -c "[[ \$('$HOSTS_PROXY' --send '$WORK/p.sock' count) == 'ok 1' ]]" ||
  fail "count: the open connection is not counted"
"$HOSTS_PROXY" --send "$WORK/p.sock" reset >/dev/null
# A reset connection ends the read at once (status 1); one still open would
# time out (status above 128).
status=0
read -r -t 5 -u 3 _ 2>/dev/null || status=$?
((status == 1)) || fail "reset: the connection was not reset (read status $status)"
exec 3>&-
ok "reset: an open connection is reset"

! "$HOSTS_PROXY" --send "$WORK/p.sock" bogus >"$WORK/bogus" || fail "an unknown command was accepted"
grep -q 'unknown command' "$WORK/bogus" || fail "unclear refusal: $(cat "$WORK/bogus")"
ok "an unknown command is refused: $(cat "$WORK/bogus")"
