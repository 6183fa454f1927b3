// parse_cs3_url and open_store for cs3:// URLs: the URL forms, the service
// account from flags, files and the environment, and what is refused.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "helpers.hpp"
#include "instance/open_store.hpp"

namespace instance::testing {
namespace {

OpenOptions with_env(std::map<std::string, std::string> env) {
  OpenOptions o;
  o.getenv = [env = std::move(env)](std::string_view name) -> std::optional<std::string> {
    if (auto it = env.find(std::string(name)); it != env.end()) return it->second;
    return std::nullopt;
  };
  return o;
}

std::filesystem::path write_temp(const std::string& name, const std::string& content) {
  auto path = std::filesystem::temp_directory_path() /
              ("cs3-url-" + std::to_string(::getpid()) + "-" + name);
  std::ofstream(path) << content;
  return path;
}

const std::map<std::string, std::string> kAccount = {{"INSTANCE_GUARD_CS3_ID", "sa"},
                                                     {"INSTANCE_GUARD_CS3_SECRET", "s3cr3t"}};

TEST(Cs3Url, FormsAndDefaults) {
  auto r = parse_cs3_url("cs3://gw.example:9142/storage-1$space-1", with_env(kAccount));
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->gateway, "gw.example:9142");
  EXPECT_FALSE(r->tls);
  EXPECT_EQ(r->space_id, "storage-1$space-1");
  EXPECT_EQ(r->folder, ".instance-guard");
  EXPECT_EQ(r->client_id, "sa");
  EXPECT_EQ(r->client_secret, "s3cr3t");
  EXPECT_FALSE(r->allow_user_space);

  auto alias = parse_cs3_url(
      "OpenCloud+CS3S://[::1]:9142/storage-1%24space-1/svc/guard/"
      "?allow-user-space=1",
      with_env(kAccount));
  ASSERT_TRUE(alias.has_value()) << alias.error().message;
  EXPECT_TRUE(alias->tls);
  EXPECT_EQ(alias->gateway, "[::1]:9142");
  EXPECT_EQ(alias->space_id, "storage-1$space-1");
  EXPECT_EQ(alias->folder, "svc/guard");
  EXPECT_TRUE(alias->allow_user_space);
}

TEST(Cs3Url, BadUrlsAreRefusedClearly) {
  for (const char* url :
       {"cs3://gw.example/space", "cs3://gw.example:9142", "cs3://:9142/s",
        "cs3://gw:9142/s?nope=1", "cs3://gw:9142/s#frag", "cs3://gw:9142/s/%zz"}) {
    auto r = parse_cs3_url(url, with_env(kAccount));
    ASSERT_FALSE(r.has_value()) << url;
    EXPECT_EQ(r.error().code, Errc::invalid) << url;
  }
  auto bad_folder = make_cs3_store(*parse_cs3_url("cs3://gw:9142/s/a/../b", with_env(kAccount)));
  ASSERT_FALSE(bad_folder.has_value());
  EXPECT_EQ(bad_folder.error().code, Errc::invalid);
  auto node_id = make_cs3_store(*parse_cs3_url("cs3://gw:9142/st$sp!node", with_env(kAccount)));
  ASSERT_FALSE(node_id.has_value());
  EXPECT_EQ(node_id.error().code, Errc::invalid);
}

TEST(Cs3Url, CredentialsInTheUrlAreRefusedAndNeverEchoed) {
  auto r = parse_cs3_url("cs3://sa:Pa55-word@gw:9142/space", with_env(kAccount));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, Errc::invalid);
  EXPECT_EQ(r.error().message.find("Pa55-word"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("INSTANCE_GUARD_CS3_SECRET"), std::string::npos);
}

TEST(Cs3Url, AccountFromFlagsFilesAndEnvironmentInThatOrder) {
  // --user and --password-file win.
  const auto file = write_temp("secret", "file-secret\n");
  auto o = with_env({{"INSTANCE_GUARD_CS3_ID", "env-id"},
                     {"INSTANCE_GUARD_CS3_SECRET", "env-s"},
                     {"INSTANCE_GUARD_USER", "user-id"},
                     {"INSTANCE_GUARD_PASSWORD", "pw"}});
  o.user = "flag-id";
  o.password_file = file;
  auto flags = parse_cs3_url("cs3://gw:1/s", o);
  ASSERT_TRUE(flags.has_value()) << flags.error().message;
  EXPECT_EQ(flags->client_id, "flag-id");
  EXPECT_EQ(flags->client_secret, "file-secret");
  // Then the CS3 variables (a secret file before a secret).
  auto env = with_env({{"INSTANCE_GUARD_CS3_ID", "env-id"},
                       {"INSTANCE_GUARD_CS3_SECRET_FILE", file.string()},
                       {"INSTANCE_GUARD_CS3_SECRET", "env-s"},
                       {"INSTANCE_GUARD_USER", "user-id"}});
  auto from_env = parse_cs3_url("cs3://gw:1/s", env);
  ASSERT_TRUE(from_env.has_value());
  EXPECT_EQ(from_env->client_id, "env-id");
  EXPECT_EQ(from_env->client_secret, "file-secret");
  // Then the generic ones.
  auto generic = parse_cs3_url("cs3://gw:1/s", with_env({{"INSTANCE_GUARD_USER", "user-id"},
                                                         {"INSTANCE_GUARD_PASSWORD", "pw"}}));
  ASSERT_TRUE(generic.has_value());
  EXPECT_EQ(generic->client_id, "user-id");
  EXPECT_EQ(generic->client_secret, "pw");
  std::filesystem::remove(file);
}

TEST(Cs3Url, MissingAccountOrBearerTokenIsAClearError) {
  auto no_secret = open_store("cs3://gw:1/s", with_env({{"INSTANCE_GUARD_CS3_ID", "sa"}}));
  ASSERT_FALSE(no_secret.has_value());
  EXPECT_EQ(no_secret.error().code, Errc::invalid);
  EXPECT_NE(no_secret.error().message.find("secret"), std::string::npos);
  auto no_id = open_store("cs3://gw:1/s", with_env({{"INSTANCE_GUARD_CS3_SECRET", "x"}}));
  ASSERT_FALSE(no_id.has_value());
  EXPECT_NE(no_id.error().message.find("INSTANCE_GUARD_CS3_ID"), std::string::npos);
  auto o = with_env(kAccount);
  o.token_file = write_temp("token", "tok\n");
  auto bearer = parse_cs3_url("cs3://gw:1/s", o);
  ASSERT_FALSE(bearer.has_value());
  EXPECT_NE(bearer.error().message.find("service account"), std::string::npos);
  std::filesystem::remove(o.token_file);
}

TEST(Cs3Url, OpenStoreDispatchesCs3Urls) {
  GatewayDouble& gateway = shared_gateway();
  auto o = with_env({{"INSTANCE_GUARD_CS3_ID", gateway.options().client_id},
                     {"INSTANCE_GUARD_CS3_SECRET", gateway.options().client_secret}});
  auto s =
      open_store("cs3://" + gateway.address() + "/" + gateway.space() + "/" + fresh_folder(), o);
  ASSERT_TRUE(s.has_value()) << s.error().message;
  EXPECT_TRUE((*s)->describe().starts_with("cs3://" + gateway.address()));
  ASSERT_TRUE((*s)->replace(key("instances/a"), "x"));
  EXPECT_EQ((*s)->get(key("instances/a"))->data, "x");
}

}  // namespace
}  // namespace instance::testing
