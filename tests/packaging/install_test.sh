#!/usr/bin/env bash
# `cmake --install` of the build tree into a temporary prefix gives the tool,
# its man page, the headers (no private ones), the libraries, the CMake
# package and instance.pc; a consumer project (examples/service) configures
# with find_package(InstanceGuard), builds, claims a directory store and
# stands down, and is refused while the tool holds that store; the same
# program builds with `pkg-config --cflags --libs instance` alone.
source "$(dirname "$0")/lib.sh"

prefix=$WORK/prefix
run_logged "$WORK/install.log" "$CMAKE" --install "$INSTANCE_BUILD_DIR" --prefix "$prefix"

# What must be there.
for f in bin/instance-guard share/man/man1/instance-guard.1 include/instance/guard.hpp \
  include/instance/open_store.hpp include/instance/stores/directory.hpp; do
  [[ -e $prefix/$f ]] || fail "$f was not installed"
done
config=$(find "$prefix" -name InstanceGuardConfig.cmake)
pc=$(find "$prefix" -name instance.pc)
[[ -n $config ]] || fail "InstanceGuardConfig.cmake was not installed"
[[ -n $pc ]] || fail "instance.pc was not installed"
"$prefix/bin/instance-guard" --version | grep -q '^instance-guard ' ||
  fail "the installed tool does not run"
[[ $(man -M "$prefix/share/man" -w instance-guard) == "$prefix/share/man/man1/instance-guard.1" ]] ||
  fail "man does not find instance-guard(1) under $prefix/share/man"

# Installed headers include only installed headers: every "..." include
# resolves inside include/, nothing from src/.
while IFS=: read -r header include; do
  target=$(sed -E 's/.*#include "([^"]+)".*/\1/' <<<"$include")
  [[ -f $prefix/include/$target ]] ||
    fail "${header#"$prefix"/} includes \"$target\", which is not installed"
done < <(grep -r -H '^#include "' "$prefix/include")
if grep -rn 'src/\|_internal\|detail/' "$prefix/include" --include='*.hpp' | grep '#include'; then
  fail "an installed header includes a private header"
fi

# The consumer: examples/service, with find_package(InstanceGuard).
consumer=$WORK/consumer
run_logged "$WORK/configure.log" "$CMAKE" -S "$INSTANCE_SOURCE_DIR/examples/service" \
  -B "$consumer" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release
found=$(sed -n 's/^InstanceGuard_DIR:PATH=//p' "$consumer/CMakeCache.txt")
[[ $found == "$prefix"/* ]] || fail "find_package took InstanceGuard from $found, not $prefix"
run_logged "$WORK/build.log" "$CMAKE" --build "$consumer"
service=$consumer/guarded-service

store=$WORK/store
"$service" "$store" >"$WORK/out" 2>"$WORK/err" || fail "guarded-service exited $?: $(cat "$WORK/err")"
grep -q '^claimed id=[0-9a-f]* mode=exclusive ' "$WORK/out" || fail "no claim: $(cat "$WORK/out")"
grep -q '^stood down$' "$WORK/out" || fail "did not stand down: $(cat "$WORK/out")"
[[ -z $(records_in "$store") ]] || fail "records left after standing down: $(records_in "$store")"

# While the installed tool holds the store, the service is refused (75);
# the tool passes that status on.
status=0
"$prefix/bin/instance-guard" run --store "$store" -- "$service" "$store" \
  >"$WORK/out" 2>"$WORK/err" || status=$?
[[ $status == 75 ]] || fail "guarded-service under a holder: exit $status, want 75: $(cat "$WORK/err")"
grep -q 'another instance' "$WORK/err" || fail "the refusal does not say why: $(cat "$WORK/err")"

# Components: the stores this build installed can be required by name, an
# unknown one fails find_package.
mkdir -p "$WORK/components"
cat >"$WORK/components/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.25)
project(components LANGUAGES CXX)
find_package(InstanceGuard REQUIRED COMPONENTS core directory faults)
find_package(InstanceGuard QUIET COMPONENTS no_such_store)
if(InstanceGuard_FOUND)
  message(STATUS "no_such_store found: yes")
else()
  message(STATUS "no_such_store found: no")
endif()
foreach(target instance::instance instance::core instance::directory instance::faults)
  if(NOT TARGET ${target})
    message(FATAL_ERROR "${target} is missing")
  endif()
endforeach()
CMAKE
run_logged "$WORK/components.log" "$CMAKE" -S "$WORK/components" -B "$WORK/components/build" \
  -DCMAKE_PREFIX_PATH="$prefix"
grep -q 'no_such_store found: no' "$WORK/components.log" ||
  fail "find_package(InstanceGuard COMPONENTS no_such_store) did not fail"

# pkg-config alone: the same program, compiled and linked with its flags.
export PKG_CONFIG_PATH=$(dirname "$pc")
flags=$(pkg-config --cflags --libs instance) || fail "pkg-config --cflags --libs instance failed"
include_dir=$(pkg-config --variable=includedir instance)
[[ $(realpath "$include_dir") == "$prefix/include" && $flags == *-linstance\ * ]] ||
  fail "pkg-config gives unexpected flags: $flags"
run_logged "$WORK/pkg-config-build.log" g++ $(pkg-config --cflags instance) -O1 \
  -o "$WORK/service-pc" "$INSTANCE_SOURCE_DIR/examples/service/main.cpp" \
  $(pkg-config --libs instance)
# (LD_LIBRARY_PATH: for a build with shared libraries.)
LD_LIBRARY_PATH=$(pkg-config --variable=libdir instance) "$WORK/service-pc" "$WORK/store-pc" \
  >"$WORK/out" 2>"$WORK/err" ||
  fail "the pkg-config build exited $?: $(cat "$WORK/err")"
grep -q '^stood down$' "$WORK/out" || fail "the pkg-config build did not stand down"

echo "PASS: installed tree: tool, headers, CMake package and pkg-config module work"
