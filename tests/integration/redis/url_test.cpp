// parse_redis_url and open_store("redis://..."): URL forms, credentials
// from files and the environment, and no secret in any message.
#include <gtest/gtest.h>

#include <fstream>
#include <map>

#include "instance/open_store.hpp"
#include "instance/stores/redis.hpp"
#include "support/temp_dir.hpp"

namespace instance::testing {
namespace {

using namespace std::chrono_literals;

constexpr std::string_view kSecret = "Url-S3cret-pw";

OpenOptions with_env(std::map<std::string, std::string> env) {
  OpenOptions o;
  o.getenv = [env = std::move(env)](std::string_view name) -> std::optional<std::string> {
    if (auto it = env.find(std::string(name)); it != env.end()) return it->second;
    return std::nullopt;
  };
  return o;
}

TEST(RedisUrl, DefaultsAndFullForm) {
  auto plain = parse_redis_url("redis://cache.example", with_env({})).value();
  EXPECT_EQ(plain.host, "cache.example");
  EXPECT_EQ(plain.port, 6379);
  EXPECT_EQ(plain.db, 0);
  EXPECT_EQ(plain.prefix, "instance-guard:");
  EXPECT_TRUE(plain.password.empty());

  auto full = parse_redis_url("REDIS://10.0.0.5:6380/3?prefix=svc%2Fa%3A", with_env({})).value();
  EXPECT_EQ(full.host, "10.0.0.5");
  EXPECT_EQ(full.port, 6380);
  EXPECT_EQ(full.db, 3);
  EXPECT_EQ(full.prefix, "svc/a:");
  EXPECT_EQ(describe_redis(full), "redis://10.0.0.5:6380/3?prefix=svc%2Fa:");

  auto v6 = parse_redis_url("redis://[::1]:7000/", with_env({})).value();
  EXPECT_EQ(v6.host, "::1");
  EXPECT_EQ(v6.port, 7000);
  EXPECT_EQ(describe_redis(v6), "redis://[::1]:7000/0?prefix=instance-guard:");
}

TEST(RedisUrl, SentinelListsTheSentinelsThenTheMasterNameThenTheDb) {
  auto s =
      parse_redis_url("redis+sentinel://s1,10.0.0.2:26380,[::1]/mymaster/2?prefix=p:", with_env({}))
          .value();
  ASSERT_EQ(s.sentinels.size(), 3u);
  EXPECT_EQ(s.sentinels[0], (std::pair<std::string, int>{"s1", 26379}));
  EXPECT_EQ(s.sentinels[1], (std::pair<std::string, int>{"10.0.0.2", 26380}));
  EXPECT_EQ(s.sentinels[2], (std::pair<std::string, int>{"::1", 26379}));
  EXPECT_EQ(s.master_name, "mymaster");
  EXPECT_EQ(s.db, 2);
  EXPECT_EQ(s.prefix, "p:");
  EXPECT_EQ(describe_redis(s),
            "redis+sentinel://s1:26379,10.0.0.2:26380,[::1]:26379/mymaster/2?prefix=p:");
  for (const char* url :
       {"redis+sentinel://s1", "redis+sentinel://s1/", "redis+sentinel://s1,/m",
        "redis+sentinel://s1/m/x", "redis+sentinel://s1/m%20x", "redis+sentinel://:pw@s1/m"}) {
    auto r = parse_redis_url(url, with_env({}));
    ASSERT_FALSE(r.has_value()) << url;
    EXPECT_EQ(r.error().code, Errc::invalid) << url;
    EXPECT_EQ(r.error().message.find("pw@"), std::string::npos) << r.error().message;
  }
}

TEST(RedisUrl, BadUrlsAreInvalidWithAReason) {
  for (const char* url :
       {"redis://", "redis://:6379", "redis://h:0", "redis://h:65536", "redis://h:x",
        "redis://h/-1", "redis://h/db1", "redis://h?db=2", "redis://h#frag", "redis://h h",
        "redis://::1:6379", "redis://[::1", "redis://h?prefix=%zz", "redis:h"}) {
    auto r = parse_redis_url(url, with_env({}));
    ASSERT_FALSE(r.has_value()) << url;
    EXPECT_EQ(r.error().code, Errc::invalid) << url;
    EXPECT_NE(r.error().message.find("store URL"), std::string::npos) << r.error().message;
  }
}

TEST(RedisUrl, TlsIsRefusedWithAnExplanation) {
  auto r = parse_redis_url("rediss://h:6380", with_env({}));
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("TLS"), std::string::npos);
}

TEST(RedisUrl, APasswordInTheUrlIsRefusedAndNeverEchoed) {
  const std::string secret(kSecret);
  for (const std::string& url :
       {"redis://:" + secret + "@h:6379", "redis://user:" + secret + "@h/0",
        "redis://user:" + secret + "/x@h", "redis://u:" + secret + "@h?prefix=p"}) {
    auto r = parse_redis_url(url, with_env({}));
    ASSERT_FALSE(r.has_value()) << "accepted a password in the URL";
    EXPECT_EQ(r.error().code, Errc::invalid);
    EXPECT_EQ(r.error().message.find(secret), std::string::npos) << r.error().message;
    EXPECT_NE(r.error().message.find("INSTANCE_GUARD_PASSWORD"), std::string::npos)
        << "the refusal should say where the password goes: " << r.error().message;
    auto opened = open_store(url, with_env({}));
    ASSERT_FALSE(opened.has_value());
    EXPECT_EQ(opened.error().message.find(secret), std::string::npos) << opened.error().message;
  }
}

TEST(RedisUrl, CredentialsComeFromTheFileOrTheEnvironment) {
  auto from_env = parse_redis_url("redis://h", with_env({{"INSTANCE_GUARD_PASSWORD", "envpw"}}));
  ASSERT_TRUE(from_env.has_value()) << from_env.error().message;
  EXPECT_EQ(from_env->password, "envpw");
  EXPECT_TRUE(from_env->user.empty());  // Redis's default user

  TempDir dir;
  const auto file = dir.path() / "pw";
  std::ofstream(file) << "filepw\n";
  OpenOptions o = with_env({{"INSTANCE_GUARD_PASSWORD", "envpw"}, {"INSTANCE_GUARD_USER", "envu"}});
  o.password_file = file;
  auto from_file = parse_redis_url("redis://urluser@h", o).value();
  EXPECT_EQ(from_file.password, "filepw") << "the file wins over the environment";
  EXPECT_EQ(from_file.user, "envu") << "INSTANCE_GUARD_USER wins over the URL's user";
  o.user = "flaguser";
  EXPECT_EQ(parse_redis_url("redis://urluser@h", o)->user, "flaguser");
  auto url_user =
      parse_redis_url("redis://urluser@h", with_env({{"INSTANCE_GUARD_PASSWORD", "p"}}));
  EXPECT_EQ(url_user->user, "urluser");
}

TEST(RedisUrl, AUserWithoutAPasswordOrATokenIsRefused) {
  auto no_pw = parse_redis_url("redis://u@h", with_env({}));
  ASSERT_FALSE(no_pw.has_value());
  EXPECT_NE(no_pw.error().message.find("no password"), std::string::npos);
  auto token = parse_redis_url("redis://h", with_env({{"INSTANCE_GUARD_TOKEN", "tok"}}));
  ASSERT_FALSE(token.has_value());
  EXPECT_NE(token.error().message.find("not a token"), std::string::npos);
  EXPECT_EQ(token.error().message.find("tok\""), std::string::npos);
}

TEST(RedisUrl, AnUnreadablePasswordFileNamesTheFileNotTheContent) {
  TempDir dir;
  OpenOptions o = with_env({});
  o.password_file = dir.path() / "missing";
  auto r = parse_redis_url("redis://h", o);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("missing"), std::string::npos);
  std::ofstream(dir.path() / "two") << std::string(kSecret) << "\nsecond\n";
  o.password_file = dir.path() / "two";
  r = parse_redis_url("redis://h", o);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message.find(kSecret), std::string::npos);
}

TEST(RedisUrl, OpenStoreDispatchesAndDescribesWithoutSecrets) {
  auto store = open_store("redis://127.0.0.1:1/2?prefix=x",
                          with_env({{"INSTANCE_GUARD_PASSWORD", std::string(kSecret)}}));
  ASSERT_TRUE(store.has_value()) << store.error().message;
  EXPECT_EQ((*store)->describe(), "redis://127.0.0.1:1/2?prefix=x");
  const Capabilities caps = (*store)->capabilities();  // unreachable: declared, not probed
  EXPECT_TRUE(caps.native_lease);
  EXPECT_TRUE(caps.server_clock);
}

}  // namespace
}  // namespace instance::testing
