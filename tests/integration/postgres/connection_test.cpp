// The store's libpq connection (src/stores/postgres/connection.cpp) on the
// test cluster: a statement run again is prepared once and then runs by its
// name; a session that forgot it (a pooler in transaction mode hands out
// another server session) or already has it under that name (another
// client's, behind the same pooler) still gets every answer right.
#include "connection.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "server.hpp"
#include "support/test_support.hpp"

namespace instance::testing {
namespace {

using namespace std::chrono_literals;
using postgres::Connection;
using postgres::Outcome;
using postgres::Param;

class PostgresConnection : public ::testing::Test {
 protected:
  void SetUp() override {
    REQUIRE_POSTGRES();
    ASSERT_EQ(conn.connect(deadline()).kind, Outcome::ok);
  }
  static postgres::SteadyTime deadline() { return std::chrono::steady_clock::now() + 10s; }
  // The statement under test: one parameter, one row back.
  std::string echo(const std::string& value) {
    const Param params[] = {{value}};
    Outcome out = conn.run(kEcho, params, deadline());
    EXPECT_EQ(out.kind, Outcome::ok) << out.message;
    if (out.kind != Outcome::ok || out.rows.size() != 1 || !out.rows[0][0]) return "<none>";
    return *out.rows[0][0];
  }
  // This session's prepared statements of ours (asked as a simple query,
  // which is never prepared).
  std::string prepared() {
    Outcome out = conn.run_simple(
        "SELECT string_agg(name, ',' ORDER BY name) FROM pg_prepared_statements "
        "WHERE name LIKE 'ig\\_%'",
        deadline());
    EXPECT_EQ(out.kind, Outcome::ok) << out.message;
    if (out.kind != Outcome::ok || out.rows.empty() || !out.rows[0][0]) return "";
    return *out.rows[0][0];
  }

  static constexpr const char* kEcho = "SELECT 'echo:' || $1::text";
  Connection conn{{{"host", "127.0.0.1"},
                   {"port", std::to_string(PostgresServer::get().port())},
                   {"dbname", "guard"},
                   {"user", "postgres"}},
                  ""};
};

TEST_F(PostgresConnection, AStatementRunAgainIsPreparedOnceUnderTheNameOfItsText) {
  EXPECT_EQ(echo("a"), "echo:a");
  EXPECT_EQ(prepared(), "") << "a statement run once is sent unnamed";
  EXPECT_EQ(echo("b"), "echo:b");
  const std::string name = postgres::prepared_name(kEcho);
  EXPECT_EQ(prepared(), name);
  EXPECT_EQ(echo("c"), "echo:c");
  EXPECT_EQ(prepared(), name) << "prepared once";
  EXPECT_NE(postgres::prepared_name("SELECT 'echo:' || $1::text "), name);
}

TEST_F(PostgresConnection, ASessionThatForgotItsStatementsStillAnswersAndStopsPreparing) {
  EXPECT_EQ(echo("a"), "echo:a");
  EXPECT_EQ(echo("b"), "echo:b");
  ASSERT_NE(prepared(), "");
  ASSERT_EQ(conn.run_simple("DEALLOCATE ALL", deadline()).kind, Outcome::ok);
  EXPECT_EQ(echo("c"), "echo:c") << "run again, unnamed";
  EXPECT_EQ(echo("d"), "echo:d");
  EXPECT_EQ(prepared(), "") << "preparing is off for this connection";
}

TEST_F(PostgresConnection, ANameAlreadyPreparedInTheSessionIsThatStatement) {
  const std::string name = postgres::prepared_name(kEcho);
  ASSERT_EQ(conn.run_simple(("PREPARE " + name + " (text) AS " + kEcho).c_str(), deadline()).kind,
            Outcome::ok);
  EXPECT_EQ(echo("a"), "echo:a");
  EXPECT_EQ(echo("b"), "echo:b");
  EXPECT_EQ(echo("c"), "echo:c");
  EXPECT_EQ(prepared(), name);
  Outcome runs = conn.run_simple(
      ("SELECT generic_plans + custom_plans FROM pg_prepared_statements WHERE name = '" + name +
       "'")
          .c_str(),
      deadline());
  ASSERT_EQ(runs.kind, Outcome::ok) << runs.message;
  ASSERT_EQ(runs.rows.size(), 1u);
  EXPECT_EQ(runs.rows[0][0], "2") << "the second and third ran by that name";
}

TEST_F(PostgresConnection, AReconnectedSessionPreparesAfresh) {
  EXPECT_EQ(echo("a"), "echo:a");
  EXPECT_EQ(echo("b"), "echo:b");
  conn.drop();
  ASSERT_EQ(conn.connect(deadline()).kind, Outcome::ok);
  EXPECT_EQ(echo("c"), "echo:c");
  EXPECT_EQ(prepared(), "") << "the new session has seen it once";
  EXPECT_EQ(echo("d"), "echo:d");
  EXPECT_EQ(prepared(), postgres::prepared_name(kEcho));
}

}  // namespace
}  // namespace instance::testing
