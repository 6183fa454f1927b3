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

#include "instance/open_store.hpp"
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

// A primary and a streaming standby (servers/postgres_cluster.sh) on free
// loopback ports in a temporary folder, replicating synchronously or not;
// stopped (folder removed) when destroyed, and by the script's watchdog if
// the test executable dies first. Logins are trusted (user postgres).
class PostgresCluster {
 public:
  explicit PostgresCluster(bool synchronous);
  ~PostgresCluster();
  PostgresCluster(const PostgresCluster&) = delete;
  PostgresCluster& operator=(const PostgresCluster&) = delete;

  bool running() const { return running_; }
  bool absent() const { return absent_; }
  const std::string& why() const { return why_; }
  int primary_port() const { return ports_[0]; }
  int standby_port() const { return ports_[1]; }
  // "postgres://127.0.0.1:P,127.0.0.1:S/guard?table=<table>&user=postgres"
  std::string store_url(const std::string& table) const;
  // An immediate shutdown of the primary (a crash: no checkpoint, clients
  // cut off); the standby promoted (waits until it takes writes).
  void crash_primary();
  void promote();

 private:
  std::string script(const std::string& command) const;
  std::filesystem::path dir_;
  int ports_[2] = {0, 0};
  bool running_ = false;
  bool absent_ = false;
  std::string why_;
};

// Runs SQL as the superuser in database `guard` on 127.0.0.1:port; the first
// row's first column (empty when none, or on an error when `quiet`; else
// an error fails the calling test).
std::string admin_sql(int port, const std::string& sql, bool quiet = false);

// Options for a store on the test cluster in `table` (a fresh one by
// default), as the trusted superuser, with short timeouts so that failures
// end quickly.
PostgresStoreOptions test_options(const std::string& table = PostgresServer::fresh_table());
std::shared_ptr<Store> test_store(PostgresStoreOptions options = test_options());
// test_options(table), logging in as the role `guard` (kUser) with `password`.
PostgresStoreOptions guard_options(const std::string& table, std::string password);

// Open options that read no environment variable (no credential leaks in).
inline OpenOptions no_env() {
  OpenOptions options;
  options.getenv = [](std::string_view) -> std::optional<std::string> { return std::nullopt; };
  return options;
}

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
