// A real ZooKeeper for the tests, started from
// tests/integration/servers/zookeeper.sh on 127.0.0.1, on a free port, in a
// fresh temporary folder; stopped (folder removed) when the object goes, and
// by the script's watchdog if the test executable dies first.
//
// ZookeeperServer::shared() is one server per test executable, started on
// first use; a test that restarts or stops its server makes its own. A test
// skips only when ZooKeeper is not installed and cannot be (Debian package
// zookeeper): REQUIRE_ZOOKEEPER(server).
#pragma once

#include <filesystem>
#include <string>

#include "instance/stores/zookeeper.hpp"
#include "support/server_script.hpp"

namespace instance::testing {

class ZookeeperServer {
 public:
  ZookeeperServer();
  ~ZookeeperServer();
  ZookeeperServer(const ZookeeperServer&) = delete;
  ZookeeperServer& operator=(const ZookeeperServer&) = delete;

  static ZookeeperServer& shared();
  // The digest credential the contract suite's stores hold.
  static constexpr const char* kUser = "guard";
  static constexpr const char* kPassword = "Zk-Digest-Pw-4b2d";

  bool running() const { return running_; }
  bool absent() const { return absent_; }
  const std::string& why_not() const { return why_not_; }
  int port() const { return port_; }
  std::string url() const { return "zk://127.0.0.1:" + std::to_string(port_); }

  // Store options for this server under a root no other test uses; short
  // retry deadlines so a stopped server fails a call within a second.
  ZookeeperStoreOptions options(std::string root = fresh_root()) const;
  static std::string fresh_root();

  bool stop();     // SIGTERM, and wait until gone
  bool crash();    // SIGKILL
  bool restart();  // start again on the same port and data
  // SIGSTOP / SIGCONT: a server that neither answers nor expires sessions
  // while paused. On resuming, it races: a client's reconnect read before the
  // server's expiry thread runs revives a session whose timeout passed. To
  // expire one client's session, cut that client off instead (FaultProxy).
  bool pause();
  bool resume();

 private:
  bool start();
  bool end(const char* how);      // the script's stop or crash
  bool signal(const char* name);  // kill -NAME the server
  std::filesystem::path dir_;
  int port_ = 0;
  bool running_ = false;
  bool absent_ = false;
  std::string why_not_;
};

}  // namespace instance::testing

#define REQUIRE_ZOOKEEPER(server)                                                         \
  do {                                                                                    \
    if ((server).absent()) GTEST_SKIP() << (server).why_not();                            \
    ASSERT_TRUE((server).running()) << "ZooKeeper did not start: " << (server).why_not(); \
  } while (0)
