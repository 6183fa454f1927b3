// One ttl: a consumer gives it once, to the guard, and a store opened from a
// URL takes its retry budget, request timeout and clock-skew threshold from
// that guard (Guard::create -> Store::tune), through wrappers too. What the
// store settled on is read from what it says (its debug line), never assumed.
#include <gtest/gtest.h>

#include "instance/guard.hpp"
#include "instance/open_store.hpp"
#include "instance/stores/counting.hpp"
#include "instance/stores/faults.hpp"
#include "instance/time.hpp"
#include "support/test_support.hpp"

namespace instance {
namespace {

using namespace std::chrono_literals;
using testing::CapturingLogger;

constexpr std::string_view kTuned = "store timing follows the guard's ttl";

// Remote stores at a closed loopback port: tune() sends no request. Each
// checks the server's clock (a skew threshold).
constexpr const char* kUrls[] = {
    "webdav://127.0.0.1:1/guard",
    "etcd://127.0.0.1:1/guard",
    "redis://127.0.0.1:1/0",
    "postgres://127.0.0.1:1/guard",
    "cs3://127.0.0.1:1/storage-1$space-1",
};

OpenOptions open_options(std::shared_ptr<Logger> logger) {
  OpenOptions o;
  o.logger = std::move(logger);
  o.getenv = [](std::string_view name) -> std::optional<std::string> {
    if (name == "INSTANCE_GUARD_CS3_ID") return "sa";  // cs3:// needs a service account
    if (name == "INSTANCE_GUARD_CS3_SECRET") return "s3cr3t";
    return std::nullopt;
  };
  return o;
}

// What the store said it settled on, field by field; nullopt when it said
// nothing (never tuned).
std::optional<std::map<std::string, std::string>> tuned(const CapturingLogger& log) {
  std::optional<std::map<std::string, std::string>> out;
  for (const auto& line : log.lines()) {
    if (line.message != kTuned) continue;
    out.emplace();
    for (const auto& f : line.fields) (*out)[f.key] = f.value;
  }
  return out;
}

Duration duration(const std::map<std::string, std::string>& fields, const std::string& key) {
  const auto it = fields.find(key);
  if (it == fields.end()) ADD_FAILURE() << "no field " << key;
  return it == fields.end() ? Duration{} : parse_duration(it->second).value();
}

TEST(StoreTiming, AStoreOpenedFromAUrlFollowsTheTtlGivenOnlyToTheGuard) {
  int opened = 0;
  for (const char* url : kUrls) {
    SCOPED_TRACE(url);
    for (const Duration ttl : {Duration(30s), Duration(6s)}) {
      auto log = std::make_shared<CapturingLogger>();
      auto store = open_store(url, open_options(log));
      if (!store && store.error().code == Errc::unsupported) break;  // not in this build
      ASSERT_TRUE(store) << store.error().message;
      ++opened;
      EXPECT_FALSE(tuned(*log)) << "opening alone tunes nothing";

      const Duration max_skew = ttl / 15;
      ASSERT_TRUE(Guard::create(*store, {.ttl = ttl, .max_skew = max_skew}));
      const auto said = tuned(*log);
      ASSERT_TRUE(said) << "Guard::create did not tune the store";
      EXPECT_EQ(duration(*said, "ttl"), ttl);
      // A renewal period (ttl / 3): an operation's retries end before the
      // next renewal is due; a request never outlasts them.
      const Duration retry = duration(*said, "retry_deadline");
      EXPECT_EQ(retry, ttl / 3);
      EXPECT_LE(duration(*said, "request_timeout"), retry);
      EXPECT_EQ(duration(*said, "max_clock_skew"), max_skew);
    }
  }
  if (opened == 0) GTEST_SKIP() << "no remote store in this build";
}

TEST(StoreTiming, AGuardOnlyShortensTheStoresOwnTimeouts) {
  // A long ttl: the renewal period (40 min) is past every store's own retry
  // deadline, which then holds as made (the options are upper bounds).
  int opened = 0;
  for (const char* url : kUrls) {
    SCOPED_TRACE(url);
    auto log = std::make_shared<CapturingLogger>();
    auto store = open_store(url, open_options(log));
    if (!store && store.error().code == Errc::unsupported) continue;
    ASSERT_TRUE(store) << store.error().message;
    ++opened;
    const Duration ttl = 2h;
    ASSERT_TRUE(Guard::create(*store, {.ttl = ttl}));
    const auto said = tuned(*log);
    ASSERT_TRUE(said);
    EXPECT_LT(duration(*said, "retry_deadline"), ttl / 3);
    EXPECT_GE(duration(*said, "retry_deadline"), 1s);
  }
  if (opened == 0) GTEST_SKIP() << "no remote store in this build";
}

TEST(StoreTiming, WrappersPassTheGuardsTimingToTheStoreTheyWrap) {
  auto log = std::make_shared<CapturingLogger>();
  auto store = open_store(kUrls[0], open_options(log));
  if (!store && store.error().code == Errc::unsupported) GTEST_SKIP() << "no WebDAV store";
  ASSERT_TRUE(store) << store.error().message;
  auto wrapped = make_counting_store(make_fault_store(*store, {.seed = 1}));
  ASSERT_TRUE(Guard::create(wrapped, {.ttl = 9s}));
  const auto said = tuned(*log);
  ASSERT_TRUE(said) << "a wrapper swallowed Store::tune";
  EXPECT_EQ(duration(*said, "retry_deadline"), 3s);
}

}  // namespace
}  // namespace instance
