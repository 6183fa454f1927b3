#!/usr/bin/env bash
# SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 sent to the guard
# reach the child and its own children (the whole process group); the
# child's exit status comes back.
source "$(dirname "$0")/lib.sh"

log=$WORK/signals.log
# The child traps every signal and records it; a grandchild records SIGTERM.
# USR2 makes it exit 3 once it has seen the others.
child_script='
echo $$ >>"$WORK/pgids"
bash -c "trap \"echo grandchild-TERM >>$WORK/grandchild.log; exit 0\" TERM; echo ready >$WORK/grandchild.ready; while :; do sleep 0.05; done" &
for s in TERM INT HUP QUIT USR1; do trap "echo $s >>\"$WORK/signals.log\"" $s; done
trap "echo USR2 >>\"$WORK/signals.log\"; exit 3" USR2
touch "$WORK/child.ready"
while :; do sleep 0.05; done
'
start_guard guard run --store "$STORE" -- bash -c "$child_script"
guard=$LAST_PID
wait_until 5 test -f "$WORK/child.ready" || fail "child did not start"
wait_until 5 test -f "$WORK/grandchild.ready" || fail "grandchild did not start"

for sig in TERM INT HUP QUIT USR1; do
  kill "-$sig" "$guard"
  wait_until 3 grep -qx "$sig" "$log" || fail "SIG$sig did not reach the child"
  running "$guard" || fail "the guard ended on SIG$sig"
  ok "SIG$sig reached the child"
done
wait_until 3 grep -q grandchild-TERM "$WORK/grandchild.log" || fail "SIGTERM did not reach the grandchild"
ok "SIGTERM reached the grandchild (process group)"

kill -USR2 "$guard"
wait_exit "$guard" 5
[[ $EXIT_CODE == 3 ]] || fail "guard exited $EXIT_CODE after the child exited 3"
[[ -z $(ls -A "$STORE/instances") ]] || fail "record left behind: $(ls "$STORE/instances")"
ok "child's exit status 3 came back; the record is gone"
