#!/usr/bin/env bash
# The Debian packages: cpack -G DEB from the build tree (packing what is
# built, building nothing), dpkg -i of both, `instance-guard run -- true`
# from /usr/bin, `man -w instance-guard`, the CMake and pkg-config files in
# place and a consumer (examples/service) building against them, then dpkg -r
# and every installed file gone. Needs root (tests and CI
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
packages=(instance-guard libinstance-guard-dev)
for package in "${packages[@]}"; do
  if dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'ok installed'; then
    fail "$package is already installed; this test would remove it. Remove it first" \
      "(dpkg -r ${packages[*]})"
  fi
done

run_logged "$WORK/cpack.log" "$CPACK" -G DEB --config "$INSTANCE_BUILD_DIR/CPackConfig.cmake" \
  -B "$WORK/deb"
tool_deb=$(find "$WORK/deb" -maxdepth 1 -name 'instance-guard_*.deb')
dev_deb=$(find "$WORK/deb" -maxdepth 1 -name 'libinstance-guard-dev_*.deb')
[[ -f $tool_deb && -f $dev_deb ]] || fail "cpack did not make both packages: $(ls "$WORK/deb")"

# The tool's package declares its shared libraries, and holds no headers.
depends=$(dpkg-deb -f "$tool_deb" Depends)
[[ $depends == *libc6* ]] || fail "instance-guard's Depends lacks libc6: $depends"
# Every library the tool needs directly (each store's: libcurl4, libgrpc++1.51,
# libprotobuf32, libpq5, libhiredis0.14, ...) is there by its package's name.
package_of() {  # the package holding a library, by its path or its target's (usr-merge)
  local real candidate
  real=$(realpath "$1")
  for candidate in "$1" "$real" "${real#/usr}"; do
    dpkg -S "$candidate" 2>/dev/null | head -1 | cut -d: -f1 | grep . && return 0
  done
  return 1
}
depends_names=$(tr ',|' '\n\n' <<<"$depends" | sed -E 's/^ +//; s/[ (].*//')
needed=$(readelf -d "$INSTANCE_GUARD_BIN" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
for soname in $needed; do
  [[ $soname == libinstance* ]] && continue  # ours (shared builds): in this package
  path=$(ldd "$INSTANCE_GUARD_BIN" | awk -v so="$soname" '$1 == so && $3 ~ /^\// {print $3}')
  [[ -n $path ]] || continue  # the dynamic loader itself
  package=$(package_of "$path") || fail "no Debian package holds $soname ($path)"
  grep -qxF "$package" <<<"$depends_names" ||
    fail "instance-guard's Depends lacks $package (for $soname): $depends"
done
dpkg-deb -c "$tool_deb" | grep -q '/usr/include/' && fail "the tool's package holds headers"
dpkg-deb -c "$tool_deb" >"$WORK/tool.files"
dpkg-deb -c "$dev_deb" >"$WORK/dev.files"

on_exit 'dpkg -r libinstance-guard-dev instance-guard >/dev/null 2>&1'
run_logged "$WORK/install.log" dpkg -i "$tool_deb" "$dev_deb"

# The tool, from /usr/bin, and its man page.
[[ $(command -v instance-guard) == /usr/bin/instance-guard ]] ||
  fail "instance-guard on the PATH is $(command -v instance-guard), not /usr/bin/instance-guard"
/usr/bin/instance-guard run --store "$WORK/store" -- true ||
  fail "instance-guard run -- true exited $?"
[[ -z $(records_in "$WORK/store") ]] || fail "a record was left behind"
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

run_logged "$WORK/remove.log" dpkg -r libinstance-guard-dev instance-guard
# Every file the packages held is gone (folders shared with others stay).
left=$(cat "$WORK/tool.files" "$WORK/dev.files" | awk '$1 !~ /^d/ {print $6}' | sed 's/^\.//' |
  while read -r f; do [[ -e $f || -L $f ]] && echo "$f"; done || true)
[[ -z $left ]] || fail "files left after dpkg -r: $left"
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'ok installed' &&
    fail "$package is still installed"
done

echo "PASS: the .debs install, run instance-guard run -- true, and uninstall cleanly"
