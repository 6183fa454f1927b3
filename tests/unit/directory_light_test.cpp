// The directory store without its syncs (DirectoryStoreOptions::sync, the
// default on a local file system): the fencing epoch numbered in the lock
// file, durable through its reservation across a reboot, and documents
// written before this boot marked so that one a crash left unreadable keeps
// nobody out and is never deleted. Boots are told to the store
// (DirectoryStoreOptions::boot_id and booted_at), so no test reboots.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "instance/admin.hpp"
#include "instance/guard.hpp"
#include "instance/stores/directory.hpp"
#include "instance/testing.hpp"
#include "instance/time.hpp"
#include "support/files.hpp"
#include "support/temp_dir.hpp"
#include "support/test_support.hpp"

namespace instance {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using ::testing::HasSubstr;
using testing::key;

using testing::read_file;
using testing::write_file;

// The first line of a lock file: its numbering.
std::string numbering(const fs::path& lock_file) {
  const std::string text = read_file(lock_file);
  return text.substr(0, text.find('\n'));
}

class DirectoryLightTest : public ::testing::Test {
 protected:
  fs::path root() const { return dir_.path() / "root"; }
  fs::path lock_file() const { return root() / "locks~" / "instances.lock"; }

  std::shared_ptr<Store> open(
      std::optional<bool> sync, std::string boot,
      std::optional<std::chrono::system_clock::time_point> booted_at = std::nullopt) {
    auto made = make_directory_store(
        {.root = root(), .sync = sync, .boot_id = std::move(boot), .booted_at = booted_at});
    EXPECT_TRUE(made) << made.error().message;
    return made ? *made : nullptr;
  }

  // Takes and gives back the lock on instances.lock; the grant's epoch.
  static std::uint64_t lock_once(Store& store) {
    auto grant = store.lock(key("instances.lock"), 30s, "owner");
    EXPECT_TRUE(grant) << grant.error().message;
    if (!grant) return 0;
    EXPECT_TRUE(store.unlock(key("instances.lock"), grant->token));
    return grant->epoch;
  }

  testing::TempDir dir_;
};

TEST_F(DirectoryLightTest, EpochsCountUpWithinABootAndJumpPastTheReservationAfterOne) {
  auto first = open(false, "boot-a");
  EXPECT_EQ(lock_once(*first), 1u);
  EXPECT_EQ(lock_once(*first), 2u);
  EXPECT_EQ(numbering(lock_file()), "epoch 2 reserved 1024 boot boot-a");
  // Another process in the same boot continues the count.
  EXPECT_EQ(lock_once(*open(false, "boot-a")), 3u);
  // After a reboot the unsynced count may have been lost with the crash;
  // the synced reservation was not: the next epoch is above it.
  auto rebooted = open(false, "boot-b");
  EXPECT_EQ(lock_once(*rebooted), kEpochReserve + 1);
  EXPECT_EQ(numbering(lock_file()), "epoch 1025 reserved 2048 boot boot-b");
  EXPECT_EQ(lock_once(*rebooted), kEpochReserve + 2);
}

TEST_F(DirectoryLightTest, ASyncedRootReservesExactlyWhatItGrants) {
  auto synced = open(true, "boot-a");
  EXPECT_EQ(lock_once(*synced), 1u);
  EXPECT_EQ(lock_once(*synced), 2u);
  EXPECT_EQ(numbering(lock_file()), "epoch 2 reserved 2 boot boot-a");
  // Another host on a shared folder has another boot id: it counts on.
  EXPECT_EQ(lock_once(*open(true, "host-b")), 3u);
  // An unsynced store beside it never reuses a number the synced one gave.
  EXPECT_EQ(lock_once(*open(false, "boot-c")), 4u);
  EXPECT_EQ(lock_once(*open(true, "boot-c")), 5u);
}

TEST_F(DirectoryLightTest, AnUnreadableNumberingCountsOnFromTheLeaseDocument) {
  auto store = open(false, "boot-a");
  write_file(lock_file(), "epoch 12 reserved 3 boot boot-a\nowner\n");  // reserved < epoch
  EXPECT_EQ(lock_once(*store), 1u) << "nothing to trust in it; the lease document is the floor";
  write_file(lock_file(), "junk");
  ASSERT_TRUE(store->replace(key("instances.lease"), R"({"epoch":77})"));
  auto claimed = store->claim_lease(
      {.lock = key("instances.lock"),
       .ttl = 30s,
       .owner = "guard-a",
       .lease = key("instances.lease"),
       .document = {.head = R"({"epoch":)", .middle = R"(,"t":")", .tail = R"("})"},
       .record = key("instances/a"),
       .record_data = "record",
       .scan = key("instances")});
  ASSERT_TRUE(claimed) << claimed.error().message;
  EXPECT_TRUE(claimed->written);
  EXPECT_EQ(claimed->epoch, 78u);
  EXPECT_EQ(claimed->grant.epoch, 78u) << "the lock file counts from the document's epoch";
  EXPECT_EQ(numbering(lock_file()), "epoch 78 reserved 1101 boot boot-a");
  EXPECT_THAT(read_file(lock_file()), HasSubstr("\nguard-a\n"));
}

TEST_F(DirectoryLightTest, AHolderIsNamedFromTheLineAfterTheNumbering) {
  auto holder = open(false, "boot-a");
  ASSERT_TRUE(holder->lock(key("instances.lock"), 30s, "the-holder"));
  auto refused = open(false, "boot-a")->lock(key("instances.lock"), 30s, "another");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Errc::locked);
  EXPECT_THAT(refused.error().message, HasSubstr("(taken by \"the-holder\")"));
}

TEST_F(DirectoryLightTest, OnlyAnUnsyncedRootMarksDocumentsWrittenBeforeThisBoot) {
  const auto later = std::chrono::system_clock::now() + 1h;
  const auto earlier = std::chrono::system_clock::now() - 1h;
  ASSERT_TRUE(open(false, "boot-a")->replace(key("instances/x"), "bytes"));
  EXPECT_TRUE(open(false, "boot-b", later)->get(key("instances/x"))->from_earlier_boot);
  EXPECT_FALSE(open(false, "boot-a", earlier)->get(key("instances/x"))->from_earlier_boot);
  EXPECT_FALSE(open(true, "boot-b", later)->get(key("instances/x"))->from_earlier_boot)
      << "a synced root may be shared with other hosts: their boots are not ours";
  auto many = open(false, "boot-b", later)->get_many(std::vector<Key>{key("instances/x")});
  ASSERT_TRUE(many);
  ASSERT_TRUE((*many)[0]);
  EXPECT_TRUE((*many)[0]->from_earlier_boot);
}

// A claim over what a crash left: the guard on the same folder after the
// reboot (booted_at later than every file in it).
class DirectoryLightClaimTest : public DirectoryLightTest {
 protected:
  std::shared_ptr<FakeClock> clock = std::make_shared<FakeClock>();
  std::shared_ptr<ManualScheduler> scheduler = std::make_shared<ManualScheduler>(clock);
  std::shared_ptr<testing::CapturingLogger> logger = std::make_shared<testing::CapturingLogger>();

  std::expected<Claim, ClaimError> claim(std::shared_ptr<Store> store, Mode mode) {
    return Guard::create(std::move(store), {.ttl = 30s,
                                            .id = "successor",
                                            .host = "host",
                                            .pid = 100,
                                            .clock = clock,
                                            .scheduler = scheduler,
                                            .logger = logger,
                                            .mode = mode,
                                            .max_skew = 2s,
                                            .boot_id = "boot-b",
                                            .pid_ns = "pidns"})
        .value()
        .claim();
  }
  // A record the holder wrote under the last boot, live for another 30 s.
  void write_record_of_last_boot() {
    ASSERT_TRUE(open(false, "boot-a")
                    ->replace(key("instances/before"),
                              R"({"id":"before","started_at":")" + format_rfc3339(clock->wall()) +
                                  R"(","expires_at":")" + format_rfc3339(clock->wall() + 30s) +
                                  R"(","host":"host","pid":4242,"boot_id":"boot-a"})"));
  }
  std::shared_ptr<Store> after_reboot() {
    return open(false, "boot-b", std::chrono::system_clock::now() + 1h);
  }
};

TEST_F(DirectoryLightClaimTest, ARecordACrashCutShortKeepsNobodyOutAndStays) {
  for (const Mode mode : {Mode::exclusive, Mode::verify, Mode::announce}) {
    SCOPED_TRACE(to_string(mode));
    write_file(root() / "instances" / "crashed", "");  // a write the crash cut short
    auto claimed = claim(after_reboot(), mode);
    ASSERT_TRUE(claimed) << claimed.error().error.message;
    EXPECT_TRUE(logger->contains("written before this host's last boot cannot be read"));
    ASSERT_TRUE(claimed->stand_down());
    scheduler->run_due();
    EXPECT_TRUE(fs::exists(root() / "instances" / "crashed")) << "never deleted";
  }
}

// status and release judge them as the claim does: a record written before
// this boot is dead, readable or not, and release takes a readable one
// without --force (an unreadable one still needs it: nothing it cannot read
// is deleted on its say-so).
TEST_F(DirectoryLightClaimTest, StatusListsRecordsOfAnEarlierBootDeadAndReleaseTakesThem) {
  write_record_of_last_boot();
  write_file(root() / "instances" / "crashed", "");
  auto same_boot = open(false, "boot-b", std::chrono::system_clock::now() - 1h);
  auto listed = list_instances(*same_boot, clock->wall());
  ASSERT_TRUE(listed) << listed.error().message;
  ASSERT_EQ(listed->size(), 2u);
  for (const InstanceEntry& entry : *listed) {
    EXPECT_TRUE(entry.live) << entry.key.str() << ": within its boot";
    EXPECT_FALSE(entry.from_earlier_boot) << entry.key.str();
  }
  EXPECT_FALSE(release_instance(*same_boot, "before", clock->wall(), false));

  auto rebooted = after_reboot();
  listed = list_instances(*rebooted, clock->wall());
  ASSERT_TRUE(listed) << listed.error().message;
  ASSERT_EQ(listed->size(), 2u);
  for (const InstanceEntry& entry : *listed) {
    EXPECT_FALSE(entry.live) << entry.key.str();
    EXPECT_TRUE(entry.from_earlier_boot) << entry.key.str();
  }
  EXPECT_TRUE((*listed)[0].readable);
  EXPECT_FALSE((*listed)[1].readable);
  auto released = release_instance(*rebooted, "before", clock->wall(), false);
  ASSERT_TRUE(released) << released.error().message;
  EXPECT_FALSE(fs::exists(root() / "instances" / "before"));
  EXPECT_FALSE(release_instance(*rebooted, "crashed", clock->wall(), false));
  EXPECT_TRUE(fs::exists(root() / "instances" / "crashed"));
}

TEST_F(DirectoryLightClaimTest, ALiveLookingRecordOfAnEarlierBootIsDeadAndRemoved) {
  // The holder crashed with the host a moment ago: its record says it is
  // live for another 30 s, but it was written before this boot.
  write_record_of_last_boot();
  auto refused =
      claim(open(false, "boot-b", std::chrono::system_clock::now() - 1h), Mode::exclusive);
  ASSERT_FALSE(refused) << "within this boot the record is live";
  auto claimed = claim(after_reboot(), Mode::exclusive);
  ASSERT_TRUE(claimed) << claimed.error().error.message;
  scheduler->run_due();
  EXPECT_FALSE(fs::exists(root() / "instances" / "before")) << "read, judged dead, removed";
  ASSERT_TRUE(claimed->stand_down());
}

TEST_F(DirectoryLightClaimTest, AnUnreadableRecordOfThisBootStillKeepsUsOut) {
  write_file(root() / "instances" / "torn", "{\"id\":");
  auto refused =
      claim(open(false, "boot-b", std::chrono::system_clock::now() - 1h), Mode::exclusive);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().error.code, Errc::another_instance);
  auto synced = claim(open(true, "boot-b", std::chrono::system_clock::now() + 1h), Mode::exclusive);
  ASSERT_FALSE(synced) << "a synced root marks nothing";
  EXPECT_EQ(synced.error().error.code, Errc::another_instance);
}

TEST_F(DirectoryLightClaimTest, ALeaseDocumentACrashCutShortIsReplacedAboveTheReservation) {
  {
    auto before = open(false, "boot-a");
    EXPECT_EQ(lock_once(*before), 1u);
  }
  write_file(root() / "instances.lease", "");
  auto claimed = claim(after_reboot(), Mode::exclusive);
  ASSERT_TRUE(claimed) << claimed.error().error.message;
  EXPECT_EQ(claimed->epoch(), kEpochReserve + 1);
  EXPECT_THAT(read_file(root() / "instances.lease"), HasSubstr("\"epoch\":1025"));
  ASSERT_TRUE(claimed->stand_down());
  // Unreadable and of this boot: refused, and left as it is.
  write_file(root() / "instances.lease", "{\"ep");
  auto refused =
      claim(open(false, "boot-b", std::chrono::system_clock::now() - 1h), Mode::exclusive);
  ASSERT_FALSE(refused);
  EXPECT_EQ(read_file(root() / "instances.lease"), "{\"ep");
}

}  // namespace
}  // namespace instance
