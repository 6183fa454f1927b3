// parse_zookeeper_url and make_zookeeper_store: URL forms, the server list,
// digest credentials from files and the environment, and no secret in any
// message.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "instance/open_store.hpp"
#include "instance/stores/zookeeper.hpp"
#include "support/temp_dir.hpp"
#include "support/test_support.hpp"

namespace instance::testing {
namespace {

constexpr std::string_view kSecret = "Zk-Url-S3cret";

TEST(ZookeeperUrl, DefaultsEnsembleAndRoot) {
  auto plain = parse_zookeeper_url("zk://zk1.example", env_only({})).value();
  EXPECT_EQ(plain.servers, "zk1.example:2181");
  EXPECT_EQ(plain.root, "/instance-guard");
  EXPECT_TRUE(plain.user.empty());
  EXPECT_TRUE(plain.password.empty());
  EXPECT_TRUE(plain.create_root);

  auto ensemble =
      parse_zookeeper_url("ZK://10.0.0.1:2181,10.0.0.2,[::1]:2182/svc/locks/", env_only({}))
          .value();
  EXPECT_EQ(ensemble.servers, "10.0.0.1:2181,10.0.0.2:2181,[::1]:2182");
  EXPECT_EQ(ensemble.root, "/svc/locks");
  auto store = make_zookeeper_store(ensemble).value();
  EXPECT_EQ(store->describe(), "zk://10.0.0.1:2181,10.0.0.2:2181,[::1]:2182/svc/locks");

  OpenOptions read_only = env_only({});
  read_only.read_only = true;
  EXPECT_FALSE(parse_zookeeper_url("zk://h", read_only)->create_root);
}

TEST(ZookeeperUrl, BadUrlsAreInvalidWithAReason) {
  for (const char* url :
       {"zk://", "zk://:2181", "zk://h:0", "zk://h:65536", "zk://h:x", "zk://h,", "zk://,h",
        "zk://h?x=1", "zk://h#f", "zk://h h", "zk://[::1", "zk://h h/x", "etcd://h", "zk:h"}) {
    auto r = parse_zookeeper_url(url, env_only({}));
    ASSERT_FALSE(r.has_value()) << url;
    EXPECT_EQ(r.error().code, Errc::invalid) << url;
    EXPECT_NE(r.error().message.find("store URL"), std::string::npos) << r.error().message;
  }
  for (const char* root : {"/a/../b", "/a//b", "/zookeeper", "/zookeeper/x", "/a b", "/%41"}) {
    auto options = parse_zookeeper_url("zk://h" + std::string(root), env_only({}));
    if (!options) continue;  // refused by the parser already
    auto store = make_zookeeper_store(*options);
    ASSERT_FALSE(store.has_value()) << root;
    EXPECT_EQ(store.error().code, Errc::invalid) << root;
  }
}

TEST(ZookeeperUrl, DigestCredentialsComeFromFilesOrTheEnvironmentNeverTheUrl) {
  auto from_env =
      parse_zookeeper_url("zk://h", env_only({{"INSTANCE_GUARD_USER", "guard"},
                                              {"INSTANCE_GUARD_PASSWORD", std::string(kSecret)}}));
  ASSERT_TRUE(from_env) << from_env.error().message;
  EXPECT_EQ(from_env->user, "guard");
  EXPECT_EQ(from_env->password, kSecret);

  TempDir dir;
  const auto file = dir.path() / "password";
  std::ofstream(file) << "from-file\n";
  OpenOptions files = env_only({{"INSTANCE_GUARD_PASSWORD", std::string(kSecret)}});
  files.password_file = file;
  auto from_file = parse_zookeeper_url("zk://svc@h", files);
  ASSERT_TRUE(from_file) << from_file.error().message;
  EXPECT_EQ(from_file->user, "svc");
  EXPECT_EQ(from_file->password, "from-file");

  const std::string in_url = "zk://guard:" + std::string(kSecret) + "@h:2181/x";
  auto refused = parse_zookeeper_url(in_url, env_only({}));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Errc::invalid);
  EXPECT_EQ(refused.error().message.find(kSecret), std::string::npos) << refused.error().message;

  auto token = parse_zookeeper_url("zk://h", env_only({{"INSTANCE_GUARD_TOKEN", "t"}}));
  ASSERT_FALSE(token);
  EXPECT_NE(token.error().message.find("not a token"), std::string::npos);

  auto no_password = parse_zookeeper_url("zk://guard@h", env_only({}));
  ASSERT_FALSE(no_password);
  EXPECT_NE(no_password.error().message.find("no password"), std::string::npos);

  auto no_user =
      parse_zookeeper_url("zk://h", env_only({{"INSTANCE_GUARD_PASSWORD", std::string(kSecret)}}));
  ASSERT_FALSE(no_user);
  EXPECT_NE(no_user.error().message.find("no user"), std::string::npos);
  EXPECT_EQ(no_user.error().message.find(kSecret), std::string::npos);
}

TEST(ZookeeperUrl, OpenStoreKnowsTheScheme) {
  const auto schemes = known_store_schemes();
  EXPECT_NE(std::ranges::find(schemes, "zk"), schemes.end()) << "the registry lists zk";
  auto store = open_store("zk://127.0.0.1:1/svc", env_only({}));
  ASSERT_TRUE(store) << store.error().message;
  EXPECT_EQ((*store)->describe(), "zk://127.0.0.1:1/svc");
}

}  // namespace
}  // namespace instance::testing
