// A lock that outlives its holder, on real WebDAV servers: chezdav (phodav,
// whose locks never expire), sabre/dav with its stock backend (every lock
// 1800 s), and the servers whose locks expire as asked or sooner (nginx,
// rclone, sabre/dav keeping the Timeout asked). The guards run on a fake
// clock, so a holder "pauses" (stops renewing) for exactly as long as a test
// says while the servers keep their real locks: the take-over may end a lock
// only once its holder's lease expired by more than max-skew, never before.
#include <gtest/gtest.h>

#include "helpers.hpp"
#include "instance/admin.hpp"
#include "instance/guard.hpp"
#include "instance/testing.hpp"
#include "instance/time.hpp"

namespace instance::testing {
namespace {

using namespace std::chrono_literals;

constexpr Duration kTtl = 30s;
constexpr Duration kSkew = 1s;  // nginx's 4 s zone needs a grant of 3 x max-skew

struct StaleServer {
  std::string name;
  WebDavServer& (*server)();
  // Whether the server names a lock's token (the store then declares
  // ends_stale_locks); rclone does not, and its locks end at their timeout.
  bool names_holder = true;
};

class StaleLock : public ::testing::TestWithParam<StaleServer> {
 protected:
  void SetUp() override {
    ASSERT_TRUE(GetParam().server().running());
    folder = WebDavServer::fresh_folder();
  }
  std::shared_ptr<Store> store() {
    auto options = options_for(GetParam().server(), folder);
    options.logger = logger;
    return make_store(std::move(options));
  }
  GuardOptions options(std::string id) {
    return {.ttl = kTtl,
            .id = std::move(id),
            .clock = clock,
            .scheduler = scheduler,
            .logger = logger,
            .mode = Mode::exclusive,
            .max_skew = kSkew};
  }
  std::expected<Claim, ClaimError> claim(const std::string& id) {
    return Guard::create(store(), options(id)).value().claim();
  }

  std::string folder;
  std::shared_ptr<FakeClock> clock = [] {
    auto c = std::make_shared<FakeClock>();
    c->set_wall(std::chrono::time_point_cast<Duration>(std::chrono::system_clock::now()));
    return c;
  }();
  std::shared_ptr<ManualScheduler> scheduler = std::make_shared<ManualScheduler>(clock);
  std::shared_ptr<CapturingLogger> logger = std::make_shared<CapturingLogger>();
};

TEST_P(StaleLock, APausedHolderKeepsItsLockJustUnderTheBoundAndLosesItJustOver) {
  int lost = 0;
  auto opts = options("holder");
  opts.on_lost = [&](const Error&) { ++lost; };
  auto a = Guard::create(store(), opts).value().claim();
  ASSERT_TRUE(a.has_value()) << a.error().error.message;
  EXPECT_EQ(store()->capabilities().ends_stale_locks, GetParam().names_holder);
  // The holder stops renewing (its scheduler never runs). Its lease and
  // record expire at +ttl on its clock; others count them live for max-skew.
  clock->advance(kTtl + kSkew - 50ms);
  auto early = claim("successor");
  ASSERT_FALSE(early.has_value()) << "a lock ended while its holder's lease was live";
  EXPECT_EQ(early.error().error.code, Errc::another_instance) << early.error().error.message;
  EXPECT_FALSE(logger->contains("ended the store's lock"));
  clock->advance(100ms);
  auto late = claim("successor");
  if (!GetParam().names_holder) {
    // The server does not say whose lock it is: it stays until the server's
    // own timeout (the ttl, in real time), as before.
    ASSERT_FALSE(late.has_value());
    EXPECT_EQ(late.error().error.code, Errc::another_instance);
    return;
  }
  ASSERT_TRUE(late.has_value()) << late.error().error.message;
  EXPECT_EQ(late->epoch(), std::optional<std::uint64_t>(2));
  EXPECT_TRUE(logger->contains("ended the store's lock of a holder that stopped renewing"));
  scheduler->run_due();  // the holder wakes: its fence (and renewal) find it gone
  EXPECT_EQ(lost, 1);
  EXPECT_TRUE(late->active());
  // And a third guard finds the successor's lock live.
  auto third = claim("third");
  ASSERT_FALSE(third.has_value());
  ASSERT_TRUE(third.error().holder && third.error().holder->record);
  EXPECT_EQ(third.error().holder->record->id, "successor");
}

TEST_P(StaleLock, AHolderThatRenewsKeepsItsLockPastTheServersGrant) {
  auto a = claim("holder");
  ASSERT_TRUE(a.has_value()) << a.error().error.message;
  // A minute and a half of renewals on the fake clock (nginx renews on its
  // 4 s grant, the rest every ttl/3): a successor is refused every time.
  for (int i = 1; i <= 9; ++i) {
    scheduler->advance(10s);
    ASSERT_TRUE(a->active()) << "after " << i * 10 << " s: " << a->loss()->message;
    auto b = claim("successor");
    ASSERT_FALSE(b.has_value()) << "took a renewing holder's lock after " << i * 10 << " s";
    EXPECT_EQ(b.error().error.code, Errc::another_instance) << b.error().error.message;
  }
  EXPECT_FALSE(logger->contains("ended the store's lock"));
}

TEST_P(StaleLock, ReleaseOfAnExpiredHolderEndsItsLockAndStatusNamesIt) {
  if (!GetParam().names_holder) GTEST_SKIP() << "the server does not say who holds a lock";
  auto a = claim("holder");
  ASSERT_TRUE(a.has_value()) << a.error().error.message;
  auto s = store();
  auto live = read_store_lock(*s);
  ASSERT_TRUE(live.has_value()) << live.error().message;
  ASSERT_TRUE(live->has_value());
  EXPECT_EQ((*live)->holder, "holder");
  // Refused while the holder's lease is live; nothing removed.
  auto refused = release_instance(*s, "holder", clock->wall(), false);
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code, Errc::another_instance);
  EXPECT_TRUE(read_store_lock(*s)->has_value());
  clock->advance(kTtl + 1ms);  // expired (status says so), within max-skew
  auto released = release_instance(*s, "holder", clock->wall(), false);
  ASSERT_TRUE(released.has_value()) << released.error().message;
  EXPECT_TRUE(released->record);
  EXPECT_TRUE(released->lock);
  EXPECT_FALSE(read_store_lock(*s)->has_value()) << "the lock is gone with the record";
  auto next = claim("next");
  EXPECT_TRUE(next.has_value()) << next.error().error.message;
}

INSTANTIATE_TEST_SUITE_P(Servers, StaleLock,
                         ::testing::Values(StaleServer{"chezdav", &WebDavServer::chezdav},
                                           StaleServer{"sabredav_stock",
                                                       &WebDavServer::sabredav_stock},
                                           StaleServer{"sabredav", &WebDavServer::sabredav},
                                           StaleServer{"nginx", &WebDavServer::nginx},
                                           StaleServer{"rclone", &WebDavServer::rclone, false}),
                         [](const auto& param_info) { return param_info.param.name; });

}  // namespace
}  // namespace instance::testing
