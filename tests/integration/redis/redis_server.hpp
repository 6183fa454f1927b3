// A real redis-server for the tests, started from
// tests/integration/servers/redis.sh on 127.0.0.1, on a free port, in a fresh
// temporary folder; stopped (folder removed) when the object goes, and by
// the script's watchdog if the test executable dies first.
//
// RedisServer::shared() is one server (append-only persistence) per test
// executable, started on first use; tests that restart or stop a server make
// their own. A test skips only when redis-server is not installed and cannot
// be (Debian package redis-server): REQUIRE_REDIS(server).
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "instance/stores/redis.hpp"
#include "support/server_script.hpp"

namespace instance::testing {

struct RedisServerConfig {
  bool persistent = true;  // appendonly yes + appendfsync always; else no persistence
  std::string password;    // requirepass (through a file) when not empty
  std::string acl_user;    // with password: an ACL user instead of the default one
};

class RedisServer {
 public:
  explicit RedisServer(RedisServerConfig config = {});
  ~RedisServer();
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  static RedisServer& shared();
  // One server per test executable that requires kPassword (default user).
  static RedisServer& with_password();
  static constexpr const char* kPassword = "Redis-Pw-7c1e";

  bool running() const { return running_; }
  // redis-server is not installed (the test should skip, naming the package).
  bool absent() const { return absent_; }
  const std::string& why_not() const { return why_not_; }
  int port() const { return port_; }
  std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }

  // Store options for this server with a prefix no other test uses; short
  // retry deadlines so a stopped server fails a call within a second.
  RedisStoreOptions options(std::string prefix = fresh_prefix()) const;
  static std::string fresh_prefix();

  bool stop();     // SIGTERM, and wait until gone
  bool crash();    // SIGKILL
  bool restart();  // start again on the same port and data
  // SIGSTOP / SIGCONT: a server that accepts connections and answers nothing
  // (a busy, overloaded or paused host), and the same server answering again.
  bool pause();
  bool resume();

  // Runs one command on the server (for setting up hostile data and
  // inspecting keys): the reply as text, "(nil)", "(integer) N" or
  // "(error) ...", arrays joined by '\n'.
  std::string command(const std::vector<std::string>& args) const;

 private:
  bool start();
  bool signal_server(int sig) const;
  RedisServerConfig config_;
  std::filesystem::path dir_;
  int port_ = 0;
  bool running_ = false;
  bool absent_ = false;
  std::string why_not_;
};

// free_port() is in support/server_script.hpp.

}  // namespace instance::testing

#define REQUIRE_REDIS(server)                                                                \
  do {                                                                                       \
    if ((server).absent()) GTEST_SKIP() << (server).why_not();                               \
    ASSERT_TRUE((server).running()) << "redis-server did not start: " << (server).why_not(); \
  } while (0)
