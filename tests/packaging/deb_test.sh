#!/usr/bin/env bash
# The Debian packages: cpack -G DEB from the build tree (packing what is
# built, building nothing) gives the tool (Depends: the C runtime and libgcc,
# the C++ runtime being linked in), one package per store module (Depends:
# the tool's version and the module's client libraries) and the -dev package. The tool's package alone
# runs `instance-guard run -- true` on a folder from /usr/bin and refuses an
# etcd:// store (78) naming instance-guard-etcd; with that package, it claims
# on a real etcd. Then `man -w instance-guard`, the CMake and pkg-config files
# in place and a consumer (examples/service) building against them, then
# dpkg -r and every installed file gone. Needs root (tests and CI
# run as root); skips otherwise. Never leaves the packages installed: an
# exit trap removes them, however the test ends.
source "$(dirname "$0")/lib.sh"

if ((EUID != 0)); then
  echo "SKIP: installing a .deb needs root (run the suite as root, as CI does)"
  exit "$SKIP"
fi
for tool in dpkg dpkg-deb dpkg-shlibdeps man; do
  command -v "$tool" >/dev/null || fail "$tool is missing (scripts/deps.sh installs it)"
done
families=()
for built in "$INSTANCE_BUILD_DIR"/stores/*.so; do families+=("$(basename "$built" .so)"); done
module_packages=()
for family in "${families[@]}"; do module_packages+=("instance-guard-$family"); done
packages=(instance-guard libinstance-guard-dev "${module_packages[@]}")
for package in "${packages[@]}"; do
  if dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'ok installed'; then
    fail "$package is already installed; this test would remove it. Remove it first" \
      "(dpkg -r ${packages[*]})"
  fi
done

run_logged "$WORK/cpack.log" "$CPACK" -G DEB --config "$INSTANCE_BUILD_DIR/CPackConfig.cmake" \
  -B "$WORK/deb"
deb_of() { find "$WORK/deb" -maxdepth 1 -name "$1_*.deb"; }
tool_deb=$(deb_of instance-guard)
dev_deb=$(deb_of libinstance-guard-dev)
[[ -f $tool_deb && -f $dev_deb ]] || fail "cpack did not make the tool's and the -dev package: $(ls "$WORK/deb")"

package_of() {  # the package holding a library, by its path or its target's (usr-merge)
  local real candidate
  real=$(realpath "$1")
  for candidate in "$1" "$real" "${real#/usr}"; do
    dpkg -S "$candidate" 2>/dev/null | head -1 | cut -d: -f1 | grep . && return 0
  done
  return 1
}
# expect_depends DEB ELF: every library ELF needs directly is in DEB's
# Depends by its package's name.
expect_depends() {
  local deb=$1 elf=$2 depends depends_names soname path package
  depends=$(dpkg-deb -f "$deb" Depends)
  depends_names=$(tr ',|' '\n\n' <<<"$depends" | sed -E 's/^ +//; s/[ (].*//')
  for soname in $(readelf -d "$elf" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
    [[ $soname == libinstance* ]] && continue  # ours (shared builds): in the tool's package
    path=$(ldd "$elf" | awk -v so="$soname" '$1 == so && $3 ~ /^\// {print $3}')
    [[ -n $path ]] || continue  # the dynamic loader itself
    package=$(package_of "$path") || fail "no Debian package holds $soname ($path)"
    grep -qxF "$package" <<<"$depends_names" ||
      fail "$(basename "$deb")'s Depends lacks $package (for $soname): $depends"
  done
}

# The tool's package: the C and C++ runtimes, nothing of any store's client.
depends=$(dpkg-deb -f "$tool_deb" Depends)
[[ $depends == *libc6* ]] || fail "instance-guard's Depends lacks libc6: $depends"
if grep -Eq 'curl|grpc|protobuf|absl|libpq|hiredis|pugixml|zookeeper' <<<"$depends"; then
  fail "instance-guard depends on a store's client library: $depends"
fi
expect_depends "$tool_deb" "$INSTANCE_GUARD_BIN"
dpkg-deb -c "$tool_deb" | grep -q '/usr/include/' && fail "the tool's package holds headers"
dpkg-deb -c "$tool_deb" | grep -q '/instance-guard/stores/' && fail "the tool's package holds a store module"
# Each module's package: its module, the tool of the same version, its client libraries.
for family in "${families[@]}"; do
  deb=$(deb_of "instance-guard-$family")
  [[ -f $deb ]] || fail "cpack made no instance-guard-$family package: $(ls "$WORK/deb")"
  dpkg-deb -c "$deb" | grep -q "/instance-guard/stores/$family\.so$" ||
    fail "instance-guard-$family does not hold $family.so: $(dpkg-deb -c "$deb")"
  dpkg-deb -f "$deb" Depends | grep -q 'instance-guard (= ' ||
    fail "instance-guard-$family does not depend on the tool's version: $(dpkg-deb -f "$deb" Depends)"
  expect_depends "$deb" "$INSTANCE_BUILD_DIR/stores/$family.so"
  dpkg-deb -c "$deb" >"$WORK/$family.files"
done
dpkg-deb -c "$tool_deb" >"$WORK/tool.files"
dpkg-deb -c "$dev_deb" >"$WORK/dev.files"

on_exit "dpkg -r ${packages[*]} >/dev/null 2>&1"
# The tool alone: a folder works; etcd:// names the package it needs.
run_logged "$WORK/install.log" dpkg -i "$tool_deb"
[[ $(command -v instance-guard) == /usr/bin/instance-guard ]] ||
  fail "instance-guard on the PATH is $(command -v instance-guard), not /usr/bin/instance-guard"
/usr/bin/instance-guard run --store "$WORK/store" -- true ||
  fail "instance-guard run -- true exited $?"
[[ -z $(records_in "$WORK/store") ]] || fail "a record was left behind"
if [[ " ${families[*]} " == *" etcd "* ]]; then
  source "$INSTANCE_SOURCE_DIR/tests/e2e/etcd_lib.sh"
  trap 'stop_all_etcd; cleanup' EXIT
  start_etcd etcd
  status=0
  /usr/bin/instance-guard run --store "etcd://127.0.0.1:$ETCD_PORT/pkg" -- true 2>"$WORK/err" || status=$?
  [[ $status == 78 ]] || fail "etcd:// without its module: exit $status, want 78: $(cat "$WORK/err")"
  grep -q 'instance-guard-etcd' "$WORK/err" || fail "the error does not name instance-guard-etcd: $(cat "$WORK/err")"
  # With the module's package: a claim against the real etcd.
  run_logged "$WORK/install-etcd.log" dpkg -i "$(deb_of instance-guard-etcd)"
  /usr/bin/instance-guard run --store "etcd://127.0.0.1:$ETCD_PORT/pkg" -- bash -c 'echo "ran $INSTANCE_GUARD_EPOCH"' \
    >"$WORK/out" 2>"$WORK/err" || fail "a claim on etcd with instance-guard-etcd installed exited $?: $(cat "$WORK/err")"
  grep -q '^ran ' "$WORK/out" || fail "the command did not run on etcd: $(cat "$WORK/err")"
  echo "ok: the tool alone refuses etcd:// naming instance-guard-etcd; with it, it claims on etcd"
fi
other_modules=()
for family in "${families[@]}"; do
  [[ $family == etcd ]] || other_modules+=("$(deb_of "instance-guard-$family")")
done
run_logged "$WORK/install-rest.log" dpkg -i "$dev_deb" "${other_modules[@]}"
# A store added as one folder installs and claims on its own: ZooKeeper, with
# the installed tool and its module package against a real server.
if [[ " ${families[*]} " == *" zookeeper "* ]]; then
  source "$INSTANCE_SOURCE_DIR/tests/e2e/zookeeper_lib.sh"
  trap 'stop_all_zk; stop_all_etcd 2>/dev/null || true; cleanup' EXIT
  start_zk zk
  /usr/bin/instance-guard run --store "zk://127.0.0.1:$ZK_PORT/pkg" -- bash -c 'echo "ran $INSTANCE_GUARD_EPOCH"' \
    >"$WORK/out" 2>"$WORK/err" || fail "a claim on ZooKeeper with instance-guard-zookeeper installed exited $?: $(cat "$WORK/err")"
  grep -q '^ran [0-9]' "$WORK/out" || fail "the command did not run on ZooKeeper: $(cat "$WORK/out") $(cat "$WORK/err")"
  echo "ok: with instance-guard-zookeeper installed, the tool claims on ZooKeeper"
fi

# The man page and the development files, where find_package and pkg-config look.
[[ $(man -w instance-guard) == /usr/share/man/man1/instance-guard.1* ]] ||
  fail "man -w instance-guard gives '$(man -w instance-guard 2>&1)'"
# The development files, where find_package and pkg-config look.
[[ -f /usr/share/doc/instance-guard/operations.md ]] || fail "the guides were not installed"
find /usr/lib -path '*/cmake/InstanceGuard/InstanceGuardConfig.cmake' | grep -q . ||
  fail "InstanceGuardConfig.cmake is not under /usr/lib"
pkg-config --exists instance || fail "pkg-config does not find instance"
# A consumer finds the package under /usr by itself, and links the packed
# (debug-stripped) libraries.
consumer=$WORK/consumer
run_logged "$WORK/configure.log" "$CMAKE" -S "$INSTANCE_SOURCE_DIR/examples/service" \
  -B "$consumer" -DCMAKE_BUILD_TYPE=Release
found=$(sed -n 's/^InstanceGuard_DIR:PATH=//p' "$consumer/CMakeCache.txt")
[[ $found == /usr/lib/* ]] || fail "find_package took InstanceGuard from $found, not /usr/lib"
run_logged "$WORK/build.log" "$CMAKE" --build "$consumer"
"$consumer/guarded-service" "$WORK/store" >"$WORK/out" 2>&1 ||
  fail "guarded-service exited $?: $(cat "$WORK/out")"
grep -q '^stood down$' "$WORK/out" || fail "guarded-service did not stand down: $(cat "$WORK/out")"

run_logged "$WORK/remove.log" dpkg -r "${packages[@]}"
# Every file the packages held is gone (folders shared with others stay).
left=$(cat "$WORK"/*.files | awk '$1 !~ /^d/ {print $6}' | sed 's/^\.//' |
  while read -r f; do [[ -e $f || -L $f ]] && echo "$f"; done || true)
[[ -z $left ]] || fail "files left after dpkg -r: $left"
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'ok installed' &&
    fail "$package is still installed"
done

echo "PASS: the .debs install (the tool alone, then each store module), run, and uninstall cleanly"
