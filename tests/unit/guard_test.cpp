// The original guard's test suite, and the rules around it, in announce mode
// (the original's protocol), driven by a fake clock and a manual scheduler:
// no test sleeps.
#include "instance/guard.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <thread>

#include "instance/stores/counting.hpp"
#include "instance/stores/memory.hpp"
#include "instance/testing.hpp"
#include "instance/time.hpp"
#include "support/test_support.hpp"

namespace instance {
namespace {

using namespace std::chrono_literals;
using testing::CapturingLogger;
using testing::FailingStore;
using testing::Op;

class GuardTest : public ::testing::Test {
 protected:
  std::shared_ptr<FakeClock> clock = std::make_shared<FakeClock>();
  std::shared_ptr<ManualScheduler> scheduler = std::make_shared<ManualScheduler>(clock);
  std::shared_ptr<CapturingLogger> logger = std::make_shared<CapturingLogger>();
  std::shared_ptr<FailingStore> store = std::make_shared<FailingStore>(make_memory_store());

  Guard guard(std::string id, Duration ttl = 30s) {
    std::string host = "host-" + id;
    return guard_on(store, std::move(id), std::move(host), ttl);
  }
  Claim claim(std::string id, Duration ttl = 30s) {
    return guard(std::move(id), ttl).claim().value();
  }

  void put_record(const std::string& id, WallTime expires) {
    Record r{.id = id, .started_at = clock->wall(), .expires_at = expires};
    ASSERT_TRUE(store->replace(record_key(id).value(), encode_record(r)));
  }
  Record stored(const std::string& id) {
    return decode_record(store->get(record_key(id).value()).value().data).value();
  }
  bool exists(const std::string& id) { return store->get(record_key(id).value()).has_value(); }

  // An announce guard on `on` (the fixture's store, or a test's own).
  Guard guard_on(std::shared_ptr<Store> on, std::string id, std::string host = "host",
                 Duration ttl = 30s) {
    return Guard::create(std::move(on), {.ttl = ttl,
                                         .id = std::move(id),
                                         .host = std::move(host),
                                         .pid = 100,
                                         .clock = clock,
                                         .scheduler = scheduler,
                                         .logger = logger,
                                         .mode = Mode::announce})
        .value();
  }
  // A record of another host's instance, written to `on`.
  void put_record_on(Store& on, const std::string& id, WallTime expires) {
    Record r{.id = id, .started_at = clock->wall(), .expires_at = expires, .host = "elsewhere"};
    ASSERT_TRUE(on.replace(record_key(id).value(), encode_record(r)));
  }
  // A claim that the live record of `holder` refused.
  static void expect_refused_by(const std::expected<Claim, ClaimError>& c,
                                const std::string& holder) {
    ASSERT_FALSE(c.has_value());
    EXPECT_EQ(c.error().error.code, Errc::another_instance);
    ASSERT_TRUE(c.error().holder && c.error().holder->record);
    EXPECT_EQ(c.error().holder->record->id, holder);
  }
  // `n` records of another host expired an hour ago: old-100, old-101, ...
  void put_stale_on(Store& on, int n) {
    for (int i = 0; i < n; ++i)
      put_record_on(on, "old-" + std::to_string(100 + i), clock->wall() - 1h);
  }
};

TEST_F(GuardTest, RefusesBesideALiveInstance) {
  auto first = claim("first");
  auto second = guard("second").claim();
  ASSERT_FALSE(second.has_value());
  EXPECT_EQ(second.error().error.code, Errc::another_instance);
  EXPECT_TRUE(second.error().error.message.starts_with(kAnotherInstanceMessage));
  ASSERT_TRUE(second.error().holder.has_value());
  ASSERT_TRUE(second.error().holder->record.has_value());
  EXPECT_EQ(second.error().holder->record->id, "first");
  EXPECT_NE(second.error().error.message.find("holder id=first host=host-first pid=100"),
            std::string::npos);
  EXPECT_NE(second.error().error.message.find(format_rfc3339(first.record().expires_at)),
            std::string::npos);
  EXPECT_FALSE(exists("second"));  // a refused guard writes nothing
}

// Where the store reads several documents in one request (batch_reads), a
// scan reads the listed records 64 at a time; a live record still refuses
// the claim, and the scan stops at the batch that holds it.
TEST_F(GuardTest, AScanReadsTheRecordsInBatchesWhereTheStoreCan) {
  auto counting = make_counting_store(make_memory_store());
  ASSERT_TRUE(counting->capabilities().batch_reads);
  put_stale_on(*counting, 100);
  counting->reset();
  auto first = guard_on(counting, "me").claim();
  ASSERT_TRUE(first.has_value()) << first.error().error.message;
  EXPECT_EQ(counting->counts()[StoreOp::get_many], 2u);  // 64 + 36
  EXPECT_EQ(counting->counts()[StoreOp::get], 0u);
  ASSERT_TRUE(first->stand_down());
  scheduler->run_due();

  // A live record among 200 stale ones, in the second batch (the listing is
  // in key order in memory): refused after two batches, not four.
  put_stale_on(*counting, 200);
  put_record_on(*counting, "old-170x", clock->wall() + 1h);
  counting->reset();
  expect_refused_by(guard_on(counting, "you").claim(), "old-170x");
  EXPECT_EQ(counting->counts()[StoreOp::get_many], 2u);
}

// A memory store that says it reads a prefix in one request (as etcd and
// PostgreSQL do), answering get_all() by the default's list() and reads.
class PrefixReadingStore final : public StoreWrapper {
 public:
  using StoreWrapper::StoreWrapper;
  Capabilities capabilities() override {
    auto caps = StoreWrapper::capabilities();
    caps.prefix_reads = true;
    return caps;
  }
};

// Where the store reads a prefix in one request (prefix_reads), a scan is
// that one request, neither a listing nor reads after it, and a live record
// among the stale ones still refuses the claim.
TEST_F(GuardTest, AScanIsOneRequestWhereTheStoreReadsAPrefixAtOnce) {
  auto counting = make_counting_store(std::make_shared<PrefixReadingStore>(make_memory_store()));
  put_stale_on(*counting, 100);
  counting->reset();
  auto first = guard_on(counting, "me").claim();
  ASSERT_TRUE(first.has_value()) << first.error().error.message;
  const auto claimed = counting->counts();
  EXPECT_EQ(claimed[StoreOp::get_all], 1u);
  EXPECT_EQ(claimed[StoreOp::list] + claimed[StoreOp::get] + claimed[StoreOp::get_many], 0u)
      << claimed.str();
  ASSERT_TRUE(first->stand_down());
  scheduler->run_due();
  EXPECT_FALSE(counting->get(record_key("old-150").value()).has_value());  // removed after

  put_record_on(*counting, "old-170x", clock->wall() + 1h);
  counting->reset();
  expect_refused_by(guard_on(counting, "you").claim(), "old-170x");
  EXPECT_EQ(counting->counts()[StoreOp::get_all], 1u);
  EXPECT_EQ(counting->counts()[StoreOp::list], 0u);
}

TEST_F(GuardTest, AfterTheFirstStandsDownTheNextStartsAtOnce) {
  auto first = claim("first");
  ASSERT_TRUE(first.stand_down());
  EXPECT_FALSE(exists("first"));
  EXPECT_TRUE(guard("second").claim().has_value());
}

TEST_F(GuardTest, TakesOverAnExpiredRecordAndDeletesIt) {
  put_record("old", clock->wall() + 10s);
  clock->advance(10s);  // now == expires_at: expired
  auto c = guard("new").claim();
  ASSERT_TRUE(c.has_value()) << c.error().error.message;
  EXPECT_TRUE(exists("new"));
  // Removed after the claim was granted, by the upkeep it scheduled at once.
  EXPECT_TRUE(exists("old"));
  scheduler->run_due();
  EXPECT_FALSE(exists("old"));
  EXPECT_TRUE(logger->contains("removed a stale record"));
}

// The upkeep removes stale records in turns of at most 16, each a task of its
// own, so a renewal that falls due meanwhile runs between two turns, even on
// a scheduler with one worker (the tool's), instead of waiting for them all.
TEST_F(GuardTest, StaleRecordsAreRemovedInTurnsAndARenewalDueRunsBetweenThem) {
  for (int i = 0; i < 40; ++i) put_record("old-" + std::to_string(100 + i), clock->wall() - 1h);
  auto c = claim("new", 30s);
  clock->advance(10s);  // the renewal (ttl/3) is due too, behind the upkeep's first turn
  EXPECT_EQ(scheduler->run_due(), 4);  // three turns of the upkeep (16, 16, 8) and the renewal
  std::vector<std::string> order;
  for (const auto& line : logger->lines()) {
    if (line.message == "removed a stale record" || line.message == "renewed") {
      order.push_back(line.message == "renewed" ? "renewal" : "removal");
    }
  }
  ASSERT_EQ(order.size(), 41u);
  EXPECT_EQ(std::count(order.begin(), order.begin() + 16, "removal"), 16);
  EXPECT_EQ(order[16], "renewal");  // after the first turn, before the rest
  for (int i = 0; i < 40; ++i) EXPECT_FALSE(exists("old-" + std::to_string(100 + i)));
  EXPECT_TRUE(c.stand_down());
}

// A stand-down runs whatever turns of the upkeep are left, at once.
TEST_F(GuardTest, AStandDownRemovesTheStaleRecordsTheUpkeepHasNotReachedYet) {
  for (int i = 0; i < 40; ++i) put_record("old-" + std::to_string(100 + i), clock->wall() - 1h);
  auto c = claim("new", 30s);
  ASSERT_TRUE(c.stand_down());
  for (int i = 0; i < 40; ++i) EXPECT_FALSE(exists("old-" + std::to_string(100 + i)));
  EXPECT_EQ(scheduler->run_due(), 0);  // no turn left behind
}

TEST_F(GuardTest, RenewalKeepsTheRecordLive) {
  auto first = claim("first", 30s);
  for (int i = 0; i < 10; ++i) {
    scheduler->advance(10s);  // ttl/3
    EXPECT_GT(stored("first").expires_at, clock->wall() + 15s) << "round " << i;
    EXPECT_FALSE(guard("second").claim().has_value());
  }
  // The claim's record, its tenure in the history, and ten renewals.
  EXPECT_EQ(store->calls(Op::replace), 12);
}

TEST_F(GuardTest, RenewsEveryThirdOfTheTtl) {
  auto first = claim("first", 30s);
  scheduler->advance(0s);  // the history's upkeep, due at once after the claim
  EXPECT_EQ(scheduler->next_due(), std::optional<Duration>(10s));
}

TEST_F(GuardTest, WithoutRenewalTheRecordExpires) {
  put_record("silent", clock->wall() + 30s);
  clock->advance(29s);
  EXPECT_FALSE(guard("second").claim().has_value());
  clock->advance(1s);
  EXPECT_TRUE(guard("second").claim().has_value());
}

TEST_F(GuardTest, AClaimWithItsOwnIdSucceeds) {
  put_record("me", clock->wall() + 1h);  // a live record of an earlier life
  auto c = guard("me").claim();
  ASSERT_TRUE(c.has_value());
  EXPECT_GT(stored("me").expires_at, clock->wall());
}

TEST_F(GuardTest, OwnIdIsJudgedByTheRecordNotTheFileName) {
  // The original skips any record whose id is its own, whatever it is called.
  Record r{.id = "me", .started_at = clock->wall(), .expires_at = clock->wall() + 1h};
  ASSERT_TRUE(store->replace(Key::parse("instances/other-name").value(), encode_record(r)));
  EXPECT_TRUE(guard("me").claim().has_value());
}

TEST_F(GuardTest, AnUnreadableRecordRefuses) {
  const Key junk = Key::parse("instances/junk").value();
  ASSERT_TRUE(store->replace(junk, "{not json"));
  auto c = guard("me").claim();
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.error().error.code, Errc::another_instance);
  ASSERT_TRUE(c.error().holder.has_value());
  EXPECT_EQ(c.error().holder->key, junk);
  EXPECT_FALSE(c.error().holder->record.has_value());
  EXPECT_TRUE(store->get(junk).has_value()) << "an unreadable record must never be deleted";
}

TEST_F(GuardTest, ARecordWithoutExpiryIsUnreadableNotExpired) {
  const Key k = Key::parse("instances/x").value();
  ASSERT_TRUE(store->replace(k, R"({"id":"x","started_at":"2026-01-01T00:00:00Z"})"));
  EXPECT_FALSE(guard("me").claim().has_value());
  EXPECT_TRUE(store->get(k).has_value());
}

TEST_F(GuardTest, AReadThatFailsRefusesAndDeletesNothing) {
  put_record("other", clock->wall() - 1h);  // expired, but we cannot read it
  store->fail_on(Op::get, Errc::unavailable);
  auto c = guard("me").claim();
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.error().error.code, Errc::unavailable);
  store->heal();
  EXPECT_TRUE(exists("other"));
  EXPECT_FALSE(exists("me"));
}

TEST_F(GuardTest, ARecordThatVanishedBeforeItsReadIsGone) {
  put_record("other", clock->wall() + 1h);
  store->fail_on(Op::get, Errc::not_found);
  EXPECT_TRUE(guard("me").claim().has_value());
}

TEST_F(GuardTest, AFailedListingFailsTheClaim) {
  store->fail_on(Op::list, Errc::unavailable);
  auto c = guard("me").claim();
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.error().error.code, Errc::unavailable);
  EXPECT_EQ(store->calls(Op::replace), 0);
}

TEST_F(GuardTest, AFailedDeleteOfAnExpiredRecordIsLoggedNotFatal) {
  put_record("old", clock->wall() - 1s);
  store->fail_on(Op::remove, Errc::permission);
  store->fail_on(Op::remove_if, Errc::permission);
  EXPECT_TRUE(guard("me").claim().has_value());
  EXPECT_TRUE(logger->contains("could not remove a stale record"));
}

TEST_F(GuardTest, AnExpiredRecordRewrittenMeanwhileIsNotDeleted) {
  put_record("old", clock->wall() - 1s);
  // Between our read and our delete, "old" restarts and rewrites its record.
  store->fail_on(Op::remove_if, Errc::conflict);
  auto c = guard("me").claim();
  EXPECT_TRUE(c.has_value());
  EXPECT_TRUE(exists("old"));
  EXPECT_EQ(store->calls(Op::remove), 0);
}

TEST_F(GuardTest, AFailedWriteFailsTheClaim) {
  store->fail_on(Op::replace, Errc::no_space);
  auto c = guard("me").claim();
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.error().error.code, Errc::no_space);
  EXPECT_EQ(scheduler->pending(), 0u);
}

TEST_F(GuardTest, AFailedRenewalIsLoggedAndRetriedNextPeriod) {
  auto c = claim("me", 30s);
  const auto first_expiry = stored("me").expires_at;
  store->fail_on(Op::replace, Errc::unavailable);
  scheduler->advance(10s);
  EXPECT_TRUE(logger->contains("renewal failed; retrying next period"));
  EXPECT_EQ(scheduler->pending(), 1u);
  store->heal();
  scheduler->advance(10s);
  EXPECT_EQ(stored("me").expires_at, clock->wall() + 30s);
  EXPECT_GT(stored("me").expires_at, first_expiry);
}

TEST_F(GuardTest, RenewalsStartAPeriodApartHoweverLongOneTook) {
  auto c = claim("me", 30s);
  scheduler->advance(0s);  // the upkeep after the claim (its tenure's write)
  int writes = 0;
  // Each write spends 4 s before it fails, as one to a store that does not
  // answer within a request timeout.
  store->fail_on(Op::replace, Errc::timeout, [&](const Key&) {
    ++writes;
    clock->advance(4s);
    return true;
  });
  scheduler->advance(10s);  // the renewal starts at 10 s and fails at 14 s
  EXPECT_EQ(writes, 1);
  EXPECT_TRUE(logger->contains("renewal failed; retrying next period"));
  EXPECT_EQ(scheduler->next_due(), std::optional<Duration>(6s))
      << "the retry is due a period after the failed renewal started, not after it ended";
  store->heal();
  scheduler->advance(6s);
  EXPECT_EQ(writes, 1);
  EXPECT_EQ(stored("me").expires_at, clock->wall() + 30s) << "renewed at 20 s";
  // One that took longer than a period is retried at once.
  store->fail_on(Op::replace, Errc::timeout, [&](const Key&) {
    ++writes;
    clock->advance(writes == 2 ? 11s : 0s);
    return writes == 2;
  });
  scheduler->advance(10s);  // starts at 30 s, fails at 41 s, retried then
  EXPECT_EQ(writes, 3);
  EXPECT_EQ(stored("me").expires_at, clock->wall() + 30s);
}

TEST_F(GuardTest, OnRenewalReportsEachRenewalAndASuccessOnlyOnceTheDeadlineMoved) {
  int renewed = 0;
  int failed = 0;
  std::string last_error;
  std::optional<MonoTime> deadline_seen;
  std::optional<Claim> c;
  auto g = Guard::create(store, {.ttl = 30s,
                                 .id = "me",
                                 .host = "host-me",
                                 .pid = 100,
                                 .clock = clock,
                                 .scheduler = scheduler,
                                 .logger = logger,
                                 .mode = Mode::verify,
                                 .check_lag = false,
                                 .on_renewal =
                                     [&](const RenewalReport& report) {
                                       if (!report.renewed) {
                                         ++failed;
                                         last_error = report.error;
                                         return;
                                       }
                                       EXPECT_TRUE(report.error.empty());
                                       ++renewed;
                                       deadline_seen = c->fence_deadline();
                                     }})
               .value();
  c.emplace(g.claim().value());
  const MonoTime first_deadline = c->fence_deadline().value();
  scheduler->advance(10s);
  EXPECT_EQ(renewed, 1);
  ASSERT_TRUE(deadline_seen);
  EXPECT_EQ(*deadline_seen, first_deadline + 10s);  // already moved when told
  store->fail_on(Op::replace, Errc::unavailable);
  scheduler->advance(10s);
  EXPECT_EQ(renewed, 1);  // a failed renewal is not reported as one
  EXPECT_EQ(failed, 1);   // but as a failure, with its reason
  EXPECT_FALSE(last_error.empty());
  store->heal();
  scheduler->advance(10s);
  EXPECT_EQ(renewed, 2);
  EXPECT_EQ(failed, 1);
  ASSERT_TRUE(c->stand_down());
  scheduler->advance(1h);
  EXPECT_EQ(renewed, 2);
}

TEST_F(GuardTest, StandDownIsIdempotentAndStopsRenewals) {
  auto c = claim("me");
  EXPECT_TRUE(c.active());
  EXPECT_TRUE(c.stand_down());
  EXPECT_FALSE(c.active());
  EXPECT_TRUE(c.stand_down());
  EXPECT_EQ(store->calls(Op::remove), 1);
  EXPECT_EQ(scheduler->pending(), 0u);
  scheduler->advance(1h);
  EXPECT_FALSE(exists("me"));
}

TEST_F(GuardTest, StandDownRunsOnDestruction) {
  { auto c = claim("me"); }
  EXPECT_FALSE(exists("me"));
  EXPECT_EQ(scheduler->pending(), 0u);
}

TEST_F(GuardTest, AMovedClaimStandsDownOnce) {
  auto a = claim("me");
  Claim b = std::move(a);
  EXPECT_TRUE(b.active());
  EXPECT_FALSE(a.active());  // NOLINT(bugprone-use-after-move): checking the moved-from state
  EXPECT_TRUE(b.stand_down());
  EXPECT_EQ(store->calls(Op::remove), 1);
}

TEST_F(GuardTest, StandDownFromManyThreadsRemovesOnce) {
  auto c = claim("me");
  std::vector<std::jthread> threads;
  for (int i = 0; i < 8; ++i) threads.emplace_back([&] { EXPECT_TRUE(c.stand_down()); });
  threads.clear();
  EXPECT_EQ(store->calls(Op::remove), 1);
  EXPECT_FALSE(exists("me"));
}

TEST_F(GuardTest, AFailedStandDownReportsAndLeavesTheRecordToExpire) {
  auto c = claim("me");
  store->fail_on(Op::remove, Errc::unavailable);
  auto r = c.stand_down();
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, Errc::unavailable);
  EXPECT_EQ(scheduler->pending(), 0u);  // no more renewals either way
}

TEST_F(GuardTest, ANullStoreIsRejected) {
  auto g = Guard::create(nullptr, {.clock = clock, .scheduler = scheduler});
  ASSERT_FALSE(g.has_value());
  EXPECT_EQ(g.error().code, Errc::invalid);
}

TEST_F(GuardTest, BadOptionsAreRejected) {
  EXPECT_FALSE(Guard::create(store, {.ttl = 0s, .scheduler = scheduler}).has_value());
  EXPECT_FALSE(Guard::create(store, {.id = "a\nb", .scheduler = scheduler}).has_value());
  EXPECT_FALSE(Guard::create(store, {.id = "\xff", .scheduler = scheduler}).has_value());
  EXPECT_FALSE(
      Guard::create(store, {.id = std::string(201, 'a'), .scheduler = scheduler}).has_value());
  EXPECT_TRUE(Guard::create(store, {.id = "pod/1 é", .scheduler = scheduler}).has_value());
}

TEST_F(GuardTest, AMissingIdIsEightRandomBytesInHex) {
  auto a = Guard::create(store, {.scheduler = scheduler}).value();
  auto b = Guard::create(store, {.scheduler = scheduler}).value();
  EXPECT_EQ(a.id().size(), 16u);
  EXPECT_EQ(a.id().find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_NE(a.id(), b.id());
  EXPECT_EQ(a.ttl(), Duration{2min});  // the original's default
}

TEST_F(GuardTest, TheRecordCarriesHostPidAndTimes) {
  auto c = claim("me", 30s);
  const Record r = stored("me");
  EXPECT_EQ(r.host, "host-me");
  EXPECT_EQ(r.pid, 100);
  EXPECT_EQ(r.started_at, clock->wall());
  EXPECT_EQ(r.expires_at, clock->wall() + 30s);
  scheduler->advance(10s);
  const Record renewed = stored("me");
  EXPECT_EQ(renewed.started_at, r.started_at);
  EXPECT_EQ(renewed.renewed_at, clock->wall());
}

TEST_F(GuardTest, AStopRequestEndsTheClaimAttempt) {
  std::stop_source stop;
  stop.request_stop();
  auto c = guard("me").claim(stop.get_token());
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.error().error.code, Errc::cancelled);
  EXPECT_FALSE(exists("me"));
}

TEST_F(GuardTest, RecordsWrittenByTheOriginalAreHonoured) {
  ASSERT_TRUE(store->replace(record_key("go-1").value(),
                             R"({"id":"go-1","started_at":"2026-01-01T00:00:00Z",)"
                             R"("expires_at":"2026-01-01T01:00:00.5+01:00"})"));
  // 2026-01-01T00:00:00.5Z: live for half a second after the fake clock's start.
  auto c = guard("me").claim();
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.error().holder->record->id, "go-1");
  clock->advance(500ms);
  EXPECT_TRUE(guard("me").claim().has_value());
  EXPECT_FALSE(exists("go-1"));
}

}  // namespace
}  // namespace instance
