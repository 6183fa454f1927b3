#!/usr/bin/env bash
# Installs the Debian 12 packages instance-guard needs to build and test,
# only those missing. Needs root or sudo. Add a package by adding a line to
# PACKAGES (with a comment saying what needs it).
set -euo pipefail

PACKAGES=(
  build-essential       # compiler, make
  cmake
  pkg-config
  libgtest-dev          # unit and contract tests
  libgmock-dev
  libbenchmark-dev      # benchmarks
  gnuplot-nox           # benchmarks: the plot in BENCHMARKS.md (bench/report.sh)
  nlohmann-json3-dev    # records, status --json
  libcli11-dev          # the command-line tool
  libcurl4-openssl-dev  # WebDAV and etcd stores
  libpugixml-dev        # WebDAV listings
  libgrpc++-dev         # CS3 store: gRPC C++ (the gateway API) and its pkg-config file
  libprotobuf-dev       # CS3 store: protobuf runtime
  protobuf-compiler     # CS3 store: protoc, for src/stores/cs3/proto
  protobuf-compiler-grpc  # CS3 store: grpc_cpp_plugin
  libpq-dev             # PostgreSQL store (libpq)
  postgresql            # PostgreSQL test server (initdb, pg_ctl, psql in the tests)
  apache2-bin           # WebDAV test server (mod_dav)
  lighttpd              # WebDAV test server
  lighttpd-mod-webdav
  nginx                 # WebDAV test server (its own lock timeout; no conditional writes)
  libnginx-mod-http-dav-ext  # nginx: PROPFIND, OPTIONS, LOCK and UNLOCK
  rclone                # WebDAV test server (rclone serve webdav: 404 for a missing folder)
  php-cli               # WebDAV test server: sabre/dav under php -S
  php-sabre-dav
  chezdav               # WebDAV test server: GNOME phodav (locks that never expire, Digest auth)
  etcd-server           # etcd store test server (tests/integration/servers/etcd.sh)
  etcd-client           # etcdctl: the etcd test server's auth setup
  curl
  openssl               # WebDAV tests: htpasswd hashes and TLS certificates
  libhiredis-dev        # Redis store (hiredis)
  redis-server          # Redis test server (integration and end-to-end tests)
  redis-sentinel        # Redis Sentinel (the Sentinel failover tests: redis-sentinel)
  redis-tools           # redis-cli: the Redis end-to-end tests inspect keys with it
  libzookeeper-mt-dev   # ZooKeeper store (the C client, multi-threaded)
  zookeeper             # ZooKeeper test server: its jars and a JRE (tests start their own; not zookeeperd, whose system service they never use)
  jq                    # end-to-end tests read JSON
  libxml2-utils         # xmllint: the tests check that history --svg writes well-formed SVG
  prometheus-node-exporter  # the metrics test scrapes run --metrics-file through it
  iproute2              # multi-host harness (tests/hosts/): ip netns, veth pairs
  nftables              # multi-host harness: partitions and one-way loss (nft drop rules)
  libfaketime           # multi-host harness: a guard whose clock runs ahead or behind
  faketime
  util-linux            # flock(1) in the end-to-end tests
  dpkg-dev              # cpack -G DEB: dpkg-shlibdeps computes the tool package's Depends
  man-db                # the packaging tests: man -w, and man --warnings on the man page
  spin                  # model checking of the claim protocols (models/, tests/models)
  clang-format-16       # the format check (tests/lint/format_test.sh, .clang-format)
  clang-tidy-16         # scripts/lint.sh tidy (.clang-tidy)
  clang-16              # libFuzzer targets (fuzz/): clang 14 cannot compile libstdc++ 12's <expected>
  libclang-rt-16-dev    # libFuzzer and sanitizer runtimes for clang-16
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  if [[ $(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null) != "install ok installed" ]]; then
    missing+=("$pkg")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "deps: all ${#PACKAGES[@]} packages are installed"
  exit 0
fi

sudo=()
if ((EUID != 0)); then
  command -v sudo >/dev/null || { echo "deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo=(sudo)
fi
echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update
"${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
