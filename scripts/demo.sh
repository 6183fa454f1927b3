#!/usr/bin/env bash
# Installs what is missing, builds, and shows the guard at work on the
# default local store (~/.local/state/instance-guard/demo): one instance
# runs, a second is refused with exit 75 and told who holds the store, and
# once the first is done the next one starts at once.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/deps.sh
./scripts/build.sh instance-guard >/dev/null
bin=./build/instance-guard

echo
echo '$ instance-guard run --name demo --ttl 10s -- sh -c '\''echo "instance $INSTANCE_GUARD_ID working"; sleep 3'\'' &'
"$bin" run --name demo --ttl 10s -- sh -c 'echo "instance $INSTANCE_GUARD_ID working"; sleep 3' &
first=$!
trap 'kill "$first" 2>/dev/null || true' EXIT
# Wait (at most 5 s) until the first has claimed the store.
for _ in $(seq 250); do
  [[ -n $("$bin" status --name demo --json | grep '"live": true' || true) ]] && break
  sleep 0.02
done

echo
echo '$ instance-guard status --name demo'
"$bin" status --name demo

echo
echo '$ instance-guard run --name demo -- echo "second instance"'
status=0
"$bin" run --name demo -- echo "second instance" || status=$?
echo "exit status: $status (75: another live instance holds the store)"

wait "$first"
trap - EXIT
echo
echo '$ instance-guard run --name demo -- echo "second instance, after the first stood down"'
"$bin" run --name demo -- echo "second instance, after the first stood down"
echo "exit status: $?"
