// A private PostgreSQL cluster for the tests, from
// tests/integration/servers/postgres.sh, on 127.0.0.1 on a free port in a
// temporary folder.
//
// One cluster per test executable: started on first use, stopped (folder
// removed) by a gtest Environment when the tests end, and by the start
// script's watchdog if the executable dies first. Each test works in its own
// table (fresh_table()). The cluster has a role `guard` that must log in
// with kPassword; every other local login is trusted.
//
// Thread safety: get() may be called from any thread; stop() and start()
// from one test at a time.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "instance/stores/postgres.hpp"
#include "support/server_script.hpp"

namespace instance::testing {

class PostgresServer {
 public:
  static constexpr std::string_view kUser = "guard";
  static constexpr std::string_view kPassword = "pg-Test-pw-7c1e'x";

  // The running cluster; started on first use. When PostgreSQL is not
  // installed, running() is false and skip_reason() names the package.
  static PostgresServer& get();

  ~PostgresServer();
  PostgresServer(const PostgresServer&) = delete;
  PostgresServer& operator=(const PostgresServer&) = delete;

  bool running() const { return running_; }
  // PostgreSQL is not installed (and could not be): tests skip, naming it.
  bool absent() const { return absent_; }
  const std::string& skip_reason() const { return skip_reason_; }
  int port() const { return port_; }
  // "postgres://127.0.0.1:PORT/guard"
  std::string url() const;
  // A table name no other test of this executable uses.
  static std::string fresh_table();

  // Fast shutdown / start again on the same port and data (a restart).
  void stop();
  bool start();

  // Runs SQL as the superuser in database `guard`; the first row's first
  // column (empty when none). Fails the calling test on an error.
  std::string admin(const std::string& sql) const;

 private:
  PostgresServer() = default;
  bool first_start();

  std::filesystem::path dir_;
  int port_ = 0;
  bool running_ = false;
  bool absent_ = false;
  std::string skip_reason_;
};

// Options for a store on the test cluster in `table` (a fresh one by
// default), as the trusted superuser, with short timeouts so that failures
// end quickly.
PostgresStoreOptions test_options(const std::string& table = PostgresServer::fresh_table());
std::shared_ptr<Store> test_store(PostgresStoreOptions options = test_options());
// test_options(table), logging in as the role `guard` (kUser) with `password`.
PostgresStoreOptions guard_options(const std::string& table, std::string password);

// free_port() is in support/server_script.hpp.

}  // namespace instance::testing

// Skips the calling test when PostgreSQL is absent (naming the package);
// fails it when the cluster did not start for another reason.
#define REQUIRE_POSTGRES()                                                      \
  do {                                                                          \
    auto& pg_server_ = ::instance::testing::PostgresServer::get();              \
    if (pg_server_.absent()) GTEST_SKIP() << pg_server_.skip_reason();          \
    ASSERT_TRUE(pg_server_.running()) << "the PostgreSQL test cluster is down"; \
  } while (false)
