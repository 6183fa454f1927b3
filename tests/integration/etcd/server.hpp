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

#include "instance/stores/etcd.hpp"

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

// Non-empty (naming the package) when /usr/bin/etcd is not installed.
std::string etcd_missing();

}  // namespace instance::testing
