// etcd:// and etcds:// URLs into options, credentials from files and the
// environment, and open_store() dispatching to the store. No server needed.
#include <gtest/gtest.h>

#include <fstream>

#include "instance/open_store.hpp"
#include "instance/stores/etcd.hpp"
#include "support/temp_dir.hpp"

namespace instance::testing {
namespace {

using namespace std::chrono_literals;

OpenOptions with_env(std::map<std::string, std::string> env) {
  OpenOptions o;
  o.getenv = [env = std::move(env)](std::string_view name) -> std::optional<std::string> {
    if (auto it = env.find(std::string(name)); it != env.end()) return it->second;
    return std::nullopt;
  };
  return o;
}

TEST(EtcdUrl, DefaultsToPort2379AndTheInstanceGuardPrefix) {
  auto o = parse_etcd_url("etcd://db.example", with_env({})).value();
  EXPECT_EQ(o.endpoints, std::vector<std::string>{"http://db.example:2379"});
  EXPECT_EQ(o.prefix, "/instance-guard");
  EXPECT_TRUE(o.user.empty());
  EXPECT_TRUE(o.password.empty());
  EXPECT_EQ(parse_etcd_url("etcd://db.example/", with_env({}))->prefix, "/instance-guard");
}

TEST(EtcdUrl, TakesPortPrefixTlsAndIpv6) {
  auto o = parse_etcd_url("ETCDS://10.0.0.1:12379/apps/billing/", with_env({})).value();
  EXPECT_EQ(o.endpoints, std::vector<std::string>{"https://10.0.0.1:12379"});
  EXPECT_EQ(o.prefix, "/apps/billing");
  EXPECT_EQ(parse_etcd_url("etcd://[::1]:2380/x", with_env({}))->endpoints.at(0),
            "http://[::1]:2380");
  EXPECT_EQ(parse_etcd_url("etcd://[::1]", with_env({}))->endpoints.at(0), "http://[::1]:2379");
}

TEST(EtcdUrl, TakesSeveralEndpointsInTheOrderGiven) {
  auto o =
      parse_etcd_url("etcd://127.0.0.1:23791,127.0.0.1:23792,127.0.0.1:23793/svc", with_env({}))
          .value();
  EXPECT_EQ(o.endpoints,
            (std::vector<std::string>{"http://127.0.0.1:23791", "http://127.0.0.1:23792",
                                      "http://127.0.0.1:23793"}));
  EXPECT_EQ(o.prefix, "/svc");
  auto mixed = parse_etcd_url("etcds://root@h1,[fd00::2]:2380,h3.example:12379",
                              with_env({{"INSTANCE_GUARD_PASSWORD", "pw"}}))
                   .value();
  EXPECT_EQ(mixed.endpoints, (std::vector<std::string>{"https://h1:2379", "https://[fd00::2]:2380",
                                                       "https://h3.example:12379"}));
  EXPECT_EQ(mixed.user, "root");
  EXPECT_EQ(mixed.prefix, "/instance-guard");
}

TEST(EtcdUrl, ABadEndpointInAListIsNamedByItsPlace) {
  const struct {
    const char* url;
    const char* names;
  } cases[] = {
      {"etcd://h1:2379,h2:,h3/x", "endpoint 2 (\"h2:\"): the port must be a number"},
      {"etcd://h1:2379,,h3/x", "endpoint 2 (\"\"): no host"},
      {"etcd://h1,h2:99999", "endpoint 2 (\"h2:99999\"): the port must be a number"},
      {"etcd://h1,h2,", "endpoint 3 (\"\"): no host"},
      {"etcd://h1,[::1:2379", "endpoint 2 (\"[::1:2379\"): the host must be"},
      {"etcd://h1,h!2", "endpoint 2 (\"h!2\"): the host must be"},
      {"etcd://h1:2379,h1:2379", "endpoint 2 (\"h1:2379\") is given twice"},
      {"etcd://h1,h1:2379", "endpoint 2 (\"h1:2379\") is given twice"},
      {"etcd://h:0", "the port must be a number"},
  };
  for (const auto& c : cases) {
    auto o = parse_etcd_url(c.url, with_env({}));
    ASSERT_FALSE(o) << c.url;
    EXPECT_EQ(o.error().code, Errc::invalid) << c.url;
    EXPECT_NE(o.error().message.find(c.names), std::string::npos) << o.error().message;
  }
}

TEST(EtcdUrl, SeveralEndpointsOpenOneStoreDescribedByThemAll) {
  auto s = open_store("etcd://127.0.0.1:23791,127.0.0.1:23792/app", with_env({}));
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ((*s)->describe(), "etcd://127.0.0.1:23791,127.0.0.1:23792/app");
  // Built directly, every endpoint is checked, and all share one scheme.
  EXPECT_FALSE(make_etcd_store({}));
  EXPECT_FALSE(make_etcd_store({.endpoints = {"http://a:1", "https://b:1"}}));
  EXPECT_FALSE(make_etcd_store({.endpoints = {"http://a:1", "http://b:1/path"}}));
  EXPECT_FALSE(make_etcd_store({.endpoints = {"http://a:1,b:1"}}));
}

TEST(EtcdUrl, RefusesWhatItCannotUse) {
  for (const char* bad : {"etcd://", "etcd://:2379", "etcd://h:port", "etcd://h:", "etcd://h/a?b=c",
                          "etcd://h/a#f", "etcd://h/a b", "etcd://h/a%2Fb", "http://h"}) {
    auto o = parse_etcd_url(bad, with_env({}));
    ASSERT_FALSE(o) << bad;
    EXPECT_EQ(o.error().code, Errc::invalid) << bad;
  }
  // The prefix is checked when the store is built.
  for (const char* bad : {"etcd://h/a//b", "etcd://h/./b", "etcd://h/a/..", "etcd://h/a#lock"}) {
    auto s = open_store(bad, with_env({}));
    ASSERT_FALSE(s) << bad;
    EXPECT_EQ(s.error().code, Errc::invalid) << bad;
  }
}

TEST(EtcdUrl, APasswordInTheUrlIsRefusedAndNeverEchoed) {
  for (const char* url : {"etcd://root:Secret-Pw-1@h:2379/x", "etcd://root:Sec/ret-Pw-1@h/x"}) {
    auto o = parse_etcd_url(url, with_env({}));
    ASSERT_FALSE(o) << url;
    EXPECT_EQ(o.error().code, Errc::invalid);
    EXPECT_EQ(o.error().message.find("Secret-Pw-1"), std::string::npos) << o.error().message;
    EXPECT_EQ(o.error().message.find("ret-Pw-1"), std::string::npos) << o.error().message;
  }
}

TEST(EtcdUrl, CredentialsComeFromFilesBeforeTheEnvironment) {
  auto o = parse_etcd_url("etcd://h", with_env({{"INSTANCE_GUARD_USER", "guard"},
                                                {"INSTANCE_GUARD_PASSWORD", "env-pw"}}))
               .value();
  EXPECT_EQ(o.user, "guard");
  EXPECT_EQ(o.password, "env-pw");

  TempDir dir;
  std::ofstream(dir.path() / "pw") << "file-pw\n";
  auto options = with_env({{"INSTANCE_GUARD_PASSWORD", "env-pw"}});
  options.password_file = dir.path() / "pw";
  auto from_file = parse_etcd_url("etcd://urluser@h", options).value();
  EXPECT_EQ(from_file.user, "urluser");
  EXPECT_EQ(from_file.password, "file-pw");

  auto token = parse_etcd_url("etcd://h", with_env({{"INSTANCE_GUARD_TOKEN", "tok"}})).value();
  EXPECT_EQ(token.token, "tok");
  EXPECT_TRUE(token.user.empty());
}

TEST(EtcdUrl, IncompleteOrDoubleCredentialsAreRefused) {
  EXPECT_FALSE(parse_etcd_url("etcd://h", with_env({{"INSTANCE_GUARD_PASSWORD", "pw"}})));
  EXPECT_FALSE(parse_etcd_url("etcd://u@h", with_env({})));
  EXPECT_FALSE(parse_etcd_url(
      "etcd://u@h", with_env({{"INSTANCE_GUARD_PASSWORD", "pw"}, {"INSTANCE_GUARD_TOKEN", "t"}})));
  auto missing = with_env({});
  missing.password_file = "/nonexistent/pw";
  auto r = parse_etcd_url("etcd://u@h", missing);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("/nonexistent/pw"), std::string::npos);
}

TEST(EtcdUrl, OpenStoreBuildsTheStoreAndDescribesItWithoutSecrets) {
  auto s = open_store("etcd://root@127.0.0.1:23790/app",
                      with_env({{"INSTANCE_GUARD_PASSWORD", "Hidden-Pw-9"}}));
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ((*s)->describe(), "etcd://127.0.0.1:23790/app");
  auto tls = open_store("etcds://127.0.0.1:23790", with_env({}));
  ASSERT_TRUE(tls);
  EXPECT_EQ((*tls)->describe(), "etcds://127.0.0.1:23790/instance-guard");
  auto unknown = open_store("nosuch://x", with_env({}));
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("etcd://"), std::string::npos);
}

}  // namespace
}  // namespace instance::testing
