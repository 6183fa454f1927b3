// parse_postgres_url: URLs, libpq parameters and credentials (no server).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "instance/open_store.hpp"
#include "instance/stores/postgres.hpp"
#include "server.hpp"  // no_env
#include "support/temp_dir.hpp"

namespace instance::testing {
namespace {

std::string param(const PostgresStoreOptions& o, std::string_view name) {
  for (const auto& [k, v] : o.params) {
    if (k == name) return v;
  }
  return "<none>";
}

TEST(PostgresUrl, HostPortDatabaseUserAndTable) {
  auto o = parse_postgres_url(
      "PostgreSQL://alice@db.example:6543/state?table=svc_a&sslmode=require", no_env());
  ASSERT_TRUE(o) << o.error().message;
  EXPECT_EQ(param(*o, "host"), "db.example");
  EXPECT_EQ(param(*o, "port"), "6543");
  EXPECT_EQ(param(*o, "dbname"), "state");
  EXPECT_EQ(param(*o, "user"), "alice");
  EXPECT_EQ(param(*o, "sslmode"), "require");
  EXPECT_EQ(param(*o, "table"), "<none>");
  EXPECT_EQ(o->table, "svc_a");
  EXPECT_EQ(o->endpoint, "postgres://db.example:6543/state?table=svc_a");
  EXPECT_TRUE(o->password.empty());
}

TEST(PostgresUrl, Defaults) {
  auto o = parse_postgres_url("postgres://127.0.0.1/guard", no_env());
  ASSERT_TRUE(o) << o.error().message;
  EXPECT_EQ(o->table, kDefaultPostgresTable);
  EXPECT_EQ(o->endpoint, "postgres://127.0.0.1/guard");
}

TEST(PostgresUrl, SeveralHostsGoToLibpqAndAskForTheWritableOne) {
  auto o = parse_postgres_url("postgres://h1:5432,h2:5433/state", no_env());
  ASSERT_TRUE(o) << o.error().message;
  EXPECT_EQ(param(*o, "host"), "h1,h2");
  EXPECT_EQ(param(*o, "port"), "5432,5433");
  EXPECT_EQ(param(*o, "target_session_attrs"), "read-write") << "the default with several hosts";
  auto primary =
      parse_postgres_url("postgres://h1,h2/state?target_session_attrs=primary", no_env());
  ASSERT_TRUE(primary) << primary.error().message;
  EXPECT_EQ(param(*primary, "target_session_attrs"), "primary");
  auto one = parse_postgres_url("postgres://h1/state", no_env());
  ASSERT_TRUE(one);
  EXPECT_EQ(param(*one, "target_session_attrs"), "<none>") << "one host: libpq's own default";
  for (const char* attrs : {"read-only", "standby", "prefer-standby"}) {
    auto refused = parse_postgres_url(
        std::string("postgres://h1,h2/state?target_session_attrs=") + attrs, no_env());
    ASSERT_FALSE(refused) << attrs;
    EXPECT_EQ(refused.error().code, Errc::invalid);
    EXPECT_NE(refused.error().message.find("makes no sense for a guard"), std::string::npos)
        << refused.error().message;
  }
}

TEST(PostgresUrl, APasswordInTheUrlIsRefusedAndNeverEchoed) {
  for (const char* url :
       {"postgres://bob:S3cret-pw@host/db", "postgres://bob@host/db?password=S3cret-pw",
        "postgres://host/db?sslpassword=S3cret-pw", "postgres://host/db?pass%77ord=S3cret-pw",
        "postgres://bob:S3cr/et-pw@host/db"}) {
    auto o = parse_postgres_url(url, no_env());
    ASSERT_FALSE(o) << url;
    EXPECT_EQ(o.error().code, Errc::invalid);
    EXPECT_EQ(o.error().message.find("S3cr"), std::string::npos) << o.error().message;
  }
}

TEST(PostgresUrl, PasswordFromAFileOrTheEnvironment) {
  TempDir dir;
  const auto file = dir.path() / "pw";
  std::ofstream(file) << "from-file-pw\n";
  OpenOptions open = no_env();
  open.password_file = file;
  open.user = "carol";
  auto o = parse_postgres_url("postgres://host/db", open);
  ASSERT_TRUE(o) << o.error().message;
  EXPECT_EQ(o->password, "from-file-pw");
  EXPECT_EQ(param(*o, "user"), "carol");

  OpenOptions env;
  env.getenv = [](std::string_view name) -> std::optional<std::string> {
    if (name == "INSTANCE_GUARD_PASSWORD") return "from-env-pw";
    return std::nullopt;
  };
  auto e = parse_postgres_url("postgres://dave@host/db", env);
  ASSERT_TRUE(e) << e.error().message;
  EXPECT_EQ(e->password, "from-env-pw");
  EXPECT_EQ(param(*e, "user"), "dave");
}

TEST(PostgresUrl, ATokenIsRefused) {
  OpenOptions open = no_env();
  open.token_file = "/nonexistent/token";
  auto o = parse_postgres_url("postgres://host/db", open);
  ASSERT_FALSE(o);
  EXPECT_EQ(o.error().code, Errc::invalid);
}

TEST(PostgresUrl, BadUrlsAreRefused) {
  for (const char* url :
       {"postgres://host/db?table=Bad-Name", "postgres://host/db?table=", "postgres://host/db#frag",
        "postgres://host/d b", "postgres://host/db?nonsense_param=1", "mysql://host/db",
        "postgres://host/db?table=%zz"}) {
    auto o = parse_postgres_url(url, no_env());
    ASSERT_FALSE(o) << url;
    EXPECT_EQ(o.error().code, Errc::invalid) << url;
  }
}

TEST(PostgresUrl, OpenStoreDispatchesBothSchemes) {
  for (const char* url :
       {"postgres://127.0.0.1:1/db", "postgresql://127.0.0.1:1/db", "POSTGRES://127.0.0.1:1/db"}) {
    auto store = open_store(url, no_env());
    ASSERT_TRUE(store) << url << ": " << store.error().message;
    EXPECT_EQ((*store)->describe(), "postgres://127.0.0.1:1/db");
  }
}

}  // namespace
}  // namespace instance::testing
