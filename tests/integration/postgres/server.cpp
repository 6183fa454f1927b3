#include "server.hpp"

#include "support/server_script.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>

#ifndef INSTANCE_TEST_SERVERS_DIR
#error "INSTANCE_TEST_SERVERS_DIR must name tests/integration/servers"
#endif

namespace instance::testing {
namespace {

std::mutex server_mu;
std::unique_ptr<PostgresServer>& the_server() {
  static std::unique_ptr<PostgresServer> server;
  return server;
}

// Stops the cluster once all tests have run.
class ServerEnvironment : public ::testing::Environment {
 public:
  void TearDown() override {
    std::lock_guard lock(server_mu);
    the_server().reset();
  }
};

[[maybe_unused]] const auto* const kEnvironment =
    ::testing::AddGlobalTestEnvironment(new ServerEnvironment);

std::string script() { return std::string(INSTANCE_TEST_SERVERS_DIR) + "/postgres.sh"; }

}  // namespace

PostgresServer& PostgresServer::get() {
  std::lock_guard lock(server_mu);
  auto& slot = the_server();
  if (!slot) {
    slot.reset(new PostgresServer());
    if (!slot->first_start() && !slot->absent_) {
      ADD_FAILURE() << "could not start the PostgreSQL test cluster: " << slot->skip_reason_;
    }
  }
  return *slot;
}

PostgresServer::~PostgresServer() {
  stop();
  if (!dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
}

std::string PostgresServer::url() const {
  return "postgres://127.0.0.1:" + std::to_string(port_) + "/guard";
}

std::string PostgresServer::fresh_table() {
  static std::atomic<int> counter{0};
  return "t" + std::to_string(++counter) + "_" + std::to_string(::getpid());
}

bool PostgresServer::first_start() {
  char dir_template[] = "/tmp/instance-guard-postgres-XXXXXX";
  if (::mkdtemp(dir_template) == nullptr) {
    skip_reason_ = "mkdtemp failed";
    return false;
  }
  dir_ = dir_template;
  // The test role's password goes to the script in a file, not on a command line.
  std::ofstream(dir_ / "password") << kPassword << "\n";
  for (int attempt = 0; attempt < 3; ++attempt) {
    port_ = free_port();
    if (start()) return true;
    if (absent_) return false;
    std::error_code ec;
    std::filesystem::remove_all(dir_ / "data", ec);  // a fresh initdb on the next port
  }
  port_ = 0;
  return false;
}

bool PostgresServer::start() {
  const auto out = dir_ / "start.out";
  const std::string cmd =
      "WATCH_PID=" + std::to_string(::getpid()) + " AUTH_USER=" + std::string(kUser) +
      " AUTH_PASSWORD_FILE=" + shell_quote((dir_ / "password").string()) + " bash " +
      shell_quote(script()) + " start " + shell_quote(dir_.string()) + " " + std::to_string(port_) +
      " > " + shell_quote(out.string()) + " 2>&1";
  const int rc = run(cmd);
  running_ = rc == 0;
  if (rc == 77) {
    absent_ = true;
    skip_reason_ =
        "PostgreSQL is not installed (Debian package postgresql; scripts/deps.sh "
        "installs it)";
  } else if (rc != 0) {
    skip_reason_ = read_file(out);
  }
  return running_;
}

void PostgresServer::stop() {
  if (dir_.empty()) return;
  run("bash " + shell_quote(script()) + " stop " + shell_quote(dir_.string()) + " >/dev/null 2>&1");
  running_ = false;
}

std::string PostgresServer::admin(const std::string& sql) const { return admin_sql(port_, sql); }

std::string admin_sql(int port, const std::string& sql, bool quiet) {
  const std::string conninfo = "host=127.0.0.1 port=" + std::to_string(port) +
                               " dbname=guard user=postgres connect_timeout=5";
  PGconn* conn = PQconnectdb(conninfo.c_str());
  std::string value;
  if (PQstatus(conn) != CONNECTION_OK) {
    if (!quiet) ADD_FAILURE() << "admin connection: " << PQerrorMessage(conn);
  } else {
    PGresult* r = PQexec(conn, sql.c_str());
    const auto status = PQresultStatus(r);
    if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK) {
      if (!quiet) ADD_FAILURE() << "admin SQL " << sql << ": " << PQresultErrorMessage(r);
    } else if (status == PGRES_TUPLES_OK && PQntuples(r) > 0 && PQnfields(r) > 0) {
      value = PQgetvalue(r, 0, 0);
    }
    PQclear(r);
  }
  PQfinish(conn);
  return value;
}

PostgresCluster::PostgresCluster(bool synchronous) {
  char dir_template[] = "/tmp/instance-guard-postgres-cluster-XXXXXX";
  if (::mkdtemp(dir_template) == nullptr) {
    why_ = "mkdtemp failed";
    return;
  }
  dir_ = dir_template;
  std::filesystem::permissions(dir_, std::filesystem::perms::others_exec,
                               std::filesystem::perm_options::add);
  const auto out = dir_ / "start.out";
  for (int attempt = 0; attempt < 3 && !running_ && !absent_; ++attempt) {
    ports_[0] = free_port();
    ports_[1] = free_port();
    std::error_code ec;
    std::filesystem::remove_all(dir_ / "c", ec);  // a fresh cluster on the next ports
    const int rc =
        run("WATCH_PID=" + std::to_string(::getpid()) + " " + script("start") + " " +
            std::to_string(ports_[0]) + " " + std::to_string(ports_[1]) +
            (synchronous ? " sync" : " async") + " > " + shell_quote(out.string()) + " 2>&1");
    running_ = rc == 0;
    absent_ = rc == 77;
    why_ = running_ ? std::string() : read_file(out);
  }
}

PostgresCluster::~PostgresCluster() {
  if (dir_.empty()) return;
  run(script("stop") + " >/dev/null 2>&1");
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

std::string PostgresCluster::script(const std::string& command) const {
  return "bash " + shell_quote(std::string(INSTANCE_TEST_SERVERS_DIR) + "/postgres_cluster.sh") +
         " " + command + " " + shell_quote((dir_ / "c").string());
}

std::string PostgresCluster::store_url(const std::string& table) const {
  return "postgres://127.0.0.1:" + std::to_string(ports_[0]) +
         ",127.0.0.1:" + std::to_string(ports_[1]) + "/guard?table=" + table + "&user=postgres";
}

void PostgresCluster::crash_primary() { run(script("crash") + " primary >/dev/null 2>&1"); }

void PostgresCluster::promote() {
  EXPECT_EQ(run(script("promote") + " >/dev/null 2>&1"), 0) << "pg_ctl promote failed";
}

PostgresStoreOptions test_options(const std::string& table) {
  auto& server = PostgresServer::get();
  PostgresStoreOptions options;
  options.params = {{"host", "127.0.0.1"},
                    {"port", std::to_string(server.port())},
                    {"dbname", "guard"},
                    {"user", "postgres"}};
  options.table = table;
  options.connect_timeout = std::chrono::milliseconds(2000);
  options.request_timeout = std::chrono::milliseconds(5000);
  options.retry_deadline = std::chrono::milliseconds(2000);
  options.initial_backoff = std::chrono::milliseconds(10);
  options.max_backoff = std::chrono::milliseconds(200);
  return options;
}

PostgresStoreOptions guard_options(const std::string& table, std::string password) {
  auto options = test_options(table);
  std::erase_if(options.params, [](const auto& p) { return p.first == "user"; });
  options.params.emplace_back("user", std::string(PostgresServer::kUser));
  options.password = std::move(password);
  return options;
}

std::shared_ptr<Store> test_store(PostgresStoreOptions options) {
  auto store = make_postgres_store(std::move(options));
  EXPECT_TRUE(store.has_value()) << store.error().message;
  return store ? *store : nullptr;
}

}  // namespace instance::testing
