#!/usr/bin/env bash
# The tool carries only the store it uses: the binary needs the C and C++
# runtimes alone (the C runtime alone where it carries its C++ runtime:
# INSTANCE_TOOL_STATIC_CXX_RUNTIME=1), a guard on a folder maps no store client library, a guard
# on Redis maps hiredis (its module's) and nothing of gRPC, protobuf, libpq or
# libcurl. A module that is missing, broken or built for another ABI is a
# configuration error (78) that says what to do.
source "$(dirname "$0")/lib.sh"

# Libraries of the store clients: none may be in the core.
clients='libcurl|libgrpc|libgpr|libprotobuf|libabsl|libpq|libhiredis|libzookeeper|libpugixml|libssl|libcrypto'

# 1. The binary itself.
ldd "$BIN" >"$WORK/ldd" || fail "ldd $BIN failed"
! grep -Eq "$clients" "$WORK/ldd" || fail "the tool links a store client library: $(grep -E "$clients" "$WORK/ldd")"
needed=$(readelf -d "$BIN" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort | tr '\n' ' ')
for lib in $needed; do
  [[ $lib =~ ^(libstdc\+\+|libgcc_s|libc|libm|ld-linux[-a-z0-9_]*|libasan|libubsan|libtsan)\.so ]] ||
    fail "the tool needs $lib, beyond the C and C++ runtimes (needs: $needed)"
done
ok "the binary needs only: $needed"
if [[ ${INSTANCE_TOOL_STATIC_CXX_RUNTIME:-} == 1 ]]; then
  [[ " $needed " != *" libstdc++.so"* ]] ||
    fail "the tool was built to carry its C++ runtime, yet needs libstdc++.so (needs: $needed)"
  ok "the binary carries its C++ runtime"
fi

# 2. A running guard on a folder: its child reads the guard's memory map.
maps_of_guard() {  # run ARGS... with a child that copies its parent's maps to $WORK/maps
  "$BIN" run "$@" -- bash -c 'cat "/proc/$PPID/maps" >"$0/maps"' "$WORK"
}
maps_of_guard --store "$STORE" --id folder || fail "the guard on a folder exited $?"
[[ -s $WORK/maps ]] || fail "no memory map was read"
! grep -Eq "$clients|/stores/[a-z0-9]+\.so" "$WORK/maps" ||
  fail "a guard on a folder maps: $(grep -E "$clients|/stores/" "$WORK/maps" | awk '{print $6}' | sort -u)"
ok "a guard on a folder maps no store module and no client library"
if [[ ${INSTANCE_TOOL_STATIC_CXX_RUNTIME:-} == 1 ]]; then
  ! grep -q 'libstdc++' "$WORK/maps" || fail "a guard on a folder maps libstdc++.so"
  ok "a guard on a folder maps no shared C++ runtime"
fi

# 3. A guard on Redis loads the Redis module and its client, and no other.
if command -v redis-server >/dev/null; then
  source "$(dirname "$0")/redis_lib.sh"
  start_redis main PERSIST=none
  rm -f "$WORK/maps"
  maps_of_guard --store "$REDIS_URL" --id redis || fail "the guard on Redis exited $?"
  grep -q '/stores/redis\.so' "$WORK/maps" || fail "the Redis module is not mapped"
  grep -q 'libhiredis' "$WORK/maps" || fail "hiredis is not mapped"
  others=$(grep -E 'libcurl|libgrpc|libprotobuf|libabsl|libpq|/stores/(webdav|etcd|cs3|postgres)\.so' \
    "$WORK/maps" | awk '{print $6}' | sort -u || true)
  [[ -z $others ]] || fail "a guard on Redis maps other stores' libraries: $others"
  ok "a guard on Redis maps redis.so and hiredis, nothing of the other stores"
else
  echo "note: redis-server is not installed (scripts/deps.sh installs it); part 3 left out"
fi

# 4. No module: exit 78 naming the scheme, the folder searched and the package.
mkdir -p "$WORK/modules"
export INSTANCE_GUARD_STORE_MODULES=$WORK/modules
run_guard run --store etcd://127.0.0.1:1/state --id x -- true
expect_exit 78 "a store whose module is missing"
for word in "etcd URLs" "$WORK/modules/etcd.so" "instance-guard-etcd" "INSTANCE_GUARD_STORE_MODULES"; do
  grep -qF -- "$word" "$WORK/last.err" || fail "the error does not say '$word': $(cat "$WORK/last.err")"
done
ok "a missing module: exit 78, $(grep -o 'no store module[^(]*' "$WORK/last.err")"

# 5. A file that is no shared object: the loader's own reason.
echo "not a shared object" >"$WORK/modules/redis.so"
run_guard status --store redis://127.0.0.1:1/0
expect_exit 78 "a broken module"
grep -q "cannot load the redis store module $WORK/modules/redis.so: .*redis.so: " "$WORK/last.err" ||
  fail "the error does not give the loader's reason: $(cat "$WORK/last.err")"
ok "a broken module: exit 78, $(grep -o 'cannot load.*' "$WORK/last.err" | cut -c1-160)"

# 6. A module built for another ABI: refused, naming both.
: "${INSTANCE_TEST_OTHER_ABI_MODULE:?names the module of another ABI (CTest sets it)}"
cp "$INSTANCE_TEST_OTHER_ABI_MODULE" "$WORK/modules/etcd.so"
run_guard run --store etcd://127.0.0.1:1/state --id x -- true
expect_exit 78 "a module of another ABI"
grep -Eq 'built for ABI [0-9]+, this instance-guard has ABI [0-9]+' "$WORK/last.err" ||
  fail "the error does not name both ABIs: $(cat "$WORK/last.err")"
ok "a module of another ABI: exit 78, $(grep -Eo 'built for ABI [0-9]+, this instance-guard has ABI [0-9]+' "$WORK/last.err")"
