#!/usr/bin/env bash
# Chaos on the directory store: three `run --wait` loops SIGKILLed at random
# moments, 200 cycles per mode; no two children ever run at once.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/chaos_lib.sh"
CYCLES=${CHAOS_CYCLES:-200}
for mode in verify exclusive auto; do
  rm -rf "$STORE" && mkdir -p "$STORE"
  chaos_run "$STORE" "$mode" "$CYCLES"
done
