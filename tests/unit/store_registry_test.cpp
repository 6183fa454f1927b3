// The registry behind open_store(): families registered by a program that
// links them (the loading of modules is tested on the tool, by
// tests/e2e/modules_test.sh, since this executable links every store in).
#include <array>
#include <memory>
#include <string_view>

#include <gtest/gtest.h>

#include "instance/open_store.hpp"
#include "instance/sdk/store_module.hpp"
#include "instance/stores/memory.hpp"

namespace instance {
namespace {

int test_family_opens = 0;

Result<std::shared_ptr<Store>> open_test(std::string_view url, const OpenOptions&) {
  if (url.ends_with("/bad")) return fail(Errc::invalid, "bad test URL");
  ++test_family_opens;
  return make_memory_store();
}

constexpr std::array<std::string_view, 2> kTestSchemes = {"x-test", "x-tests"};
const StoreModule kTestModule{.family = "x-test", .schemes = kTestSchemes, .open = open_test};

TEST(StoreRegistry, ARegisteredFamilyOpensItsSchemesInAnyLetterCase) {
  ASSERT_TRUE(register_store_module(kTestModule));
  const int before = test_family_opens;
  auto store = open_store("x-test://somewhere/state");
  ASSERT_TRUE(store) << store.error().message;
  EXPECT_TRUE(open_store("X-TESTS://somewhere/state"));
  EXPECT_EQ(test_family_opens, before + 2);
  // The family's own errors come through unchanged.
  auto bad = open_store("x-test://somewhere/bad");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, Errc::invalid);
  EXPECT_EQ(bad.error().message, "bad test URL");
}

TEST(StoreRegistry, RegisteringTheSameFamilyAgainIsANoOp) {
  ASSERT_TRUE(register_store_module(kTestModule));
  EXPECT_TRUE(register_store_module(kTestModule));
}

TEST(StoreRegistry, ASchemeBelongsToOneFamily) {
  constexpr static std::array<std::string_view, 1> kTaken = {"memory"};
  const StoreModule thief{.family = "thief", .schemes = kTaken, .open = open_test};
  auto registered = register_store_module(thief);
  ASSERT_FALSE(registered);
  EXPECT_EQ(registered.error().code, Errc::invalid);
  EXPECT_NE(registered.error().message.find("\"memory\""), std::string::npos)
      << registered.error().message;
  EXPECT_NE(registered.error().message.find("\"thief\""), std::string::npos);
}

TEST(StoreRegistry, AModuleOfAnotherAbiIsRefusedNamingBothVersions) {
  constexpr static std::array<std::string_view, 1> kSchemes = {"x-future"};
  const StoreModule future{
      .abi = kStoreModuleAbi + 1, .family = "future", .schemes = kSchemes, .open = open_test};
  auto registered = register_store_module(future);
  ASSERT_FALSE(registered);
  EXPECT_EQ(registered.error().code, Errc::unsupported);
  const auto& message = registered.error().message;
  EXPECT_NE(message.find("ABI " + std::to_string(kStoreModuleAbi + 1)), std::string::npos)
      << message;
  EXPECT_NE(message.find("ABI " + std::to_string(kStoreModuleAbi)), std::string::npos);
  EXPECT_FALSE(open_store("x-future://there"));
}

TEST(StoreRegistry, AModuleWithoutSchemesOrOpenIsRefused) {
  const StoreModule empty{.family = "empty"};
  auto registered = register_store_module(empty);
  ASSERT_FALSE(registered);
  EXPECT_EQ(registered.error().code, Errc::invalid);
}

TEST(StoreRegistry, AnUnknownSchemeListsTheKnownOnesAndHidesThePassword) {
  auto store = open_store("gopher://user:s3cret-pw@host/state");
  ASSERT_FALSE(store);
  EXPECT_EQ(store.error().code, Errc::invalid);
  const auto& message = store.error().message;
  EXPECT_NE(message.find("\"gopher\""), std::string::npos) << message;
  EXPECT_NE(message.find("etcd://"), std::string::npos) << message;
  EXPECT_NE(message.find("file://"), std::string::npos) << message;
  EXPECT_EQ(message.find("s3cret-pw"), std::string::npos) << message;
}

TEST(StoreRegistry, PathsAndFileUrlsOpenTheDirectoryStore) {
  auto plain = open_store("/tmp/instance-guard-registry-test");
  ASSERT_TRUE(plain) << plain.error().message;
  EXPECT_NE((*plain)->describe().find("instance-guard-registry-test"), std::string::npos);
  auto url = open_store("FILE:///tmp/instance-guard-registry-test");
  ASSERT_TRUE(url) << url.error().message;
  EXPECT_FALSE(open_store("file://otherhost/tmp/x"));
}

TEST(StoreRegistry, AFileUrlTakesOnlyTheSyncQuery) {
  for (const char* query : {"?sync=on", "?sync=off", "?sync=auto"}) {
    auto opened = open_store(std::string("file:///tmp/instance-guard-registry-test") + query);
    ASSERT_TRUE(opened) << query << ": " << opened.error().message;
    EXPECT_EQ((*opened)->describe(), "file:///tmp/instance-guard-registry-test")
        << "the query is an option, not part of the folder";
  }
  for (const char* bad : {"?sync=yes", "?mode=x", "#frag"}) {
    auto refused = open_store(std::string("file:///tmp/instance-guard-registry-test") + bad);
    ASSERT_FALSE(refused) << bad;
    EXPECT_EQ(refused.error().code, Errc::invalid);
    EXPECT_NE(refused.error().message.find(bad[0] == '#' ? "fragment" : "sync=on"),
              std::string::npos)
        << refused.error().message;
  }
}

}  // namespace
}  // namespace instance
