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

# A consumer of the core links nothing of any store's client libraries.
clients='libcurl|libgrpc|libgpr|libprotobuf|libabsl|libpq|libhiredis|libzookeeper|libpugixml'
if readelf -d "$service" | grep NEEDED | grep -Eq "$clients"; then
  fail "guarded-service (instance::core) links store clients: $(readelf -d "$service" | grep NEEDED)"
fi

# Every store module built is installed, with its header.
modules=$prefix/$(sed -n 's/^CMAKE_INSTALL_LIBDIR:PATH=//p' "$INSTANCE_BUILD_DIR/CMakeCache.txt")/instance-guard/stores
stores=()
for built in "$INSTANCE_BUILD_DIR"/stores/*.so; do
  name=$(basename "$built" .so)
  [[ -f $modules/$name.so ]] || fail "the $name store module was built but not installed in $modules"
  [[ -f $prefix/include/instance/stores/$name.hpp ]] || fail "instance/stores/$name.hpp is not installed"
  stores+=("$name")
done
((${#stores[@]} > 0)) || fail "no store module was built"
# The installed tool loads them from there: the store's own URL check answers.
for name in "${stores[@]}"; do
  INSTANCE_GUARD_STORE_MODULES=$modules "$prefix/bin/instance-guard" status \
    --store "$name://127.0.0.1:1/?no-such-option=1" >"$WORK/out" 2>&1 || true
  ! grep -Eq 'no store module|cannot load' "$WORK/out" ||
    fail "the installed tool cannot load its $name module: $(cat "$WORK/out")"
done

# Components and one target per store: every store can be required by name,
# an unknown one fails find_package, and a program linking only
# instance::<store> links, registers the store and runs: the store's
# exported link interface carries its own dependencies (libcurl, gRPC,
# libpq, hiredis, ...), found because the component was asked for.
mkdir -p "$WORK/components"
{
  echo 'cmake_minimum_required(VERSION 3.25)'
  echo 'project(components LANGUAGES CXX)'
  echo "find_package(InstanceGuard REQUIRED COMPONENTS core faults counting ${stores[*]})"
  echo 'foreach(target instance::core instance::faults instance::counting)'
  echo '  if(NOT TARGET ${target})'
  echo '    message(FATAL_ERROR "${target} is missing")'
  echo '  endif()'
  echo 'endforeach()'
  for name in "${stores[@]}"; do
    echo "add_executable(link_$name link_$name.cpp)"
    echo "target_link_libraries(link_$name PRIVATE instance::$name)"
  done
  echo 'find_package(InstanceGuard QUIET COMPONENTS no_such_store)'
  echo 'if(InstanceGuard_FOUND)'
  echo '  message(STATUS "no_such_store found: yes")'
  echo 'else()'
  echo '  message(STATUS "no_such_store found: no")'
  echo 'endif()'
} >"$WORK/components/CMakeLists.txt"
for name in "${stores[@]}"; do
  cat >"$WORK/components/link_$name.cpp" <<CPP
// Links the store in and registers it: no module is loaded.
#include <instance/stores/$name.hpp>
int main() {
  return instance::register_store_module(instance::${name}_store_module()) ? 0 : 1;
}
CPP
done
run_logged "$WORK/components.log" "$CMAKE" -S "$WORK/components" -B "$WORK/components/build" \
  -DCMAKE_PREFIX_PATH="$prefix"
grep -q 'no_such_store found: no' "$WORK/components.log" ||
  fail "find_package(InstanceGuard COMPONENTS no_such_store) did not fail"
run_logged "$WORK/components-build.log" "$CMAKE" --build "$WORK/components/build" -j2
for name in "${stores[@]}"; do
  "$WORK/components/build/link_$name" || fail "a program linking instance::$name exited $?"
done
echo "stores installed, each linking alone: ${stores[*]}"

# pkg-config alone: the same program, compiled and linked with its flags.
export PKG_CONFIG_PATH=$(dirname "$pc")
flags=$(pkg-config --cflags --libs instance) || fail "pkg-config --cflags --libs instance failed"
include_dir=$(pkg-config --variable=includedir instance)
[[ $(realpath "$include_dir") == "$prefix/include" && $flags == *-linstance_core\ * ]] ||
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
