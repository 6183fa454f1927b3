// A real etcd for the tests, started from tests/integration/servers/etcd.sh
// on 127.0.0.1 on free ports in a fresh temporary folder.
//
// shared() and with_auth() are started at most once per test executable, on
// first use, and stopped (folder removed) when the tests end; the script's
// watchdog stops them too if the executable dies first. A test that needs to
// stop and restart its server makes its own EtcdServer. The test fails
// (fatal for the caller to check with running()) when etcd cannot start;
// it is skipped only when the etcd binary is absent (see etcd_missing()).
//
// Thread safety: shared() and with_auth() may be called from any thread.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "instance/guard.hpp"
#include "instance/stores/etcd.hpp"
#include "instance/testing.hpp"
#include "support/test_support.hpp"

namespace instance::testing {

struct EtcdServerConfig {
  std::string root_password;  // non-empty: auth enabled, user root
  bool tls = false;           // https with a self-signed certificate (ca_file())
  // With tls: clients must show a certificate signed by a CA of the test's
  // own (etcd --client-cert-auth); client_cert() and client_key() are one.
  bool client_cert_auth = false;
};

class EtcdServer {
 public:
  using Config = EtcdServerConfig;

  static EtcdServer& shared();
  static EtcdServer& with_auth();
  static constexpr const char* kRootPassword = "etcd-Test-pw-7c1e";

  // Starts a server of its own (stopped by the destructor).
  explicit EtcdServer(Config config = {});
  ~EtcdServer();
  EtcdServer(const EtcdServer&) = delete;
  EtcdServer& operator=(const EtcdServer&) = delete;

  bool running() const { return !url_.empty(); }
  const std::string& url() const { return url_; }  // "http://127.0.0.1:PORT"
  int port() const { return port_; }
  std::filesystem::path dir() const { return dir_; }
  std::filesystem::path ca_file() const { return dir_ / "cert.pem"; }
  std::filesystem::path client_cert() const { return dir_ / "client.pem"; }
  std::filesystem::path client_key() const { return dir_ / "client.key"; }

  // Stops the server, keeping its data; start() brings the same member back
  // on the same ports.
  void stop();
  bool start();

  // Options for a store on this server under a prefix no other test uses.
  EtcdStoreOptions options(std::string prefix = fresh_prefix()) const;
  std::shared_ptr<Store> store(std::string prefix = fresh_prefix()) const;
  static std::string fresh_prefix();

 private:
  Config config_;
  std::filesystem::path dir_;
  std::string url_;
  int port_ = 0;
  int peer_port_ = 0;
};

// A three-member etcd cluster of a test's own, from
// tests/integration/servers/etcd_cluster.sh on free loopback ports, stopped
// (folder removed) by the destructor; the script's watchdog stops it too if
// the executable dies first. Members are numbered 1 to 3.
class EtcdCluster {
 public:
  EtcdCluster();
  ~EtcdCluster();
  EtcdCluster(const EtcdCluster&) = delete;
  EtcdCluster& operator=(const EtcdCluster&) = delete;

  bool running() const { return urls_.size() == 3; }
  const std::vector<std::string>& urls() const { return urls_; }  // member i at [i - 1]
  // "etcd://127.0.0.1:A,127.0.0.1:B,127.0.0.1:C<prefix>" in the order given.
  std::string store_url(const std::vector<int>& order, const std::string& prefix) const;
  // Member i stopped (TERM; `crash`: KILL), keeping its data; started again,
  // waiting until it serves (which needs a majority up).
  void stop_member(int i, bool crash = false);
  bool start_member(int i);
  // The leader's number, 0 when none answers as one.
  int leader() const;

 private:
  // The script's command line: COMMAND DIR ARGS.
  std::string script(const std::string& command, const std::string& args = "") const;
  std::filesystem::path dir_;
  std::vector<std::string> urls_;
};

// An exclusive guard on `store` whose time is a FakeClock with a
// ManualScheduler: its renewals run when the test advances `scheduler`,
// never by sleeping (the leases still run on the server's real clock).
struct ManualGuard {
  std::shared_ptr<FakeClock> clock;
  std::shared_ptr<ManualScheduler> scheduler;
  std::shared_ptr<CapturingLogger> logger;
  Guard guard;
};
ManualGuard manual_guard(std::shared_ptr<Store> store, Duration ttl, std::string id,
                         std::shared_ptr<CapturingLogger> logger = nullptr);

// Non-empty (naming the package) when /usr/bin/etcd is not installed.
std::string etcd_missing();

}  // namespace instance::testing
