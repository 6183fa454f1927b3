// status and release judge a record as a claim does: one that names a
// process on this host that is gone is not live, whatever its expiry says.
#include "instance/admin.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "instance/guard.hpp"
#include "instance/stores/memory.hpp"
#include "instance/testing.hpp"

namespace instance {
namespace {

using namespace std::chrono_literals;

// A pid with no process: a child that exited and was reaped.
std::int64_t dead_pid() {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  EXPECT_EQ(::waitpid(child, nullptr, 0), child);
  return child;
}

class AdminTest : public ::testing::Test {
 protected:
  std::shared_ptr<Store> store = make_memory_store();
  std::shared_ptr<FakeClock> clock = std::make_shared<FakeClock>();
  std::shared_ptr<ManualScheduler> scheduler = std::make_shared<ManualScheduler>(clock);

  // A claim held for an hour under `pid`, with this host's name, boot and
  // pid namespace (Guard::create fills them in): its record names that pid.
  Claim claim_as(const std::string& id, std::int64_t pid) {
    auto guard = Guard::create(store, {.ttl = 1h,
                                       .id = id,
                                       .pid = pid,
                                       .clock = clock,
                                       .scheduler = scheduler,
                                       .mode = Mode::announce});
    EXPECT_TRUE(guard.has_value());
    auto claim = guard->claim();
    EXPECT_TRUE(claim.has_value()) << claim.error().error.message;
    return std::move(*claim);
  }
};

TEST_F(AdminTest, ARecordOfAProcessOnThisHostThatIsGoneIsListedDeadNotLive) {
  auto dead = claim_as("dead", dead_pid());
  auto alive = claim_as("alive", ::getppid());
  auto entries = list_instances(*store, clock->wall());
  ASSERT_TRUE(entries.has_value()) << entries.error().message;
  ASSERT_EQ(entries->size(), 2u);
  const InstanceEntry& a = (*entries)[0];
  const InstanceEntry& d = (*entries)[1];
  EXPECT_EQ(a.record->id, "alive");
  EXPECT_TRUE(a.live);
  EXPECT_FALSE(a.process_gone);
  EXPECT_EQ(d.record->id, "dead");
  EXPECT_TRUE(d.record->live_at(clock->wall())) << "its expiry alone says live";
  EXPECT_FALSE(d.live);
  EXPECT_TRUE(d.process_gone);
}

TEST_F(AdminTest, ReleaseRemovesADeadProcesssRecordWithoutForceButNotALiveOnes) {
  auto dead = claim_as("dead", dead_pid());
  auto alive = claim_as("alive", ::getppid());
  auto released = release_instance(*store, "dead", clock->wall(), false);
  ASSERT_TRUE(released.has_value()) << released.error().message;
  EXPECT_TRUE(released->record);
  auto refused = release_instance(*store, "alive", clock->wall(), false);
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code, Errc::another_instance);
}

}  // namespace
}  // namespace instance
