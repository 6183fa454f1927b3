// verify, exclusive and auto: exclusion, fencing epochs, loss detection,
// skew margins, same-host crashes and waiting. Fake clock, manual scheduler.
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <map>
#include <thread>

#include "instance/admin.hpp"
#include "instance/guard.hpp"
#include "instance/liveness.hpp"
#include "instance/sdk/store_wrapper.hpp"
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

// A store with only the plain operations, as nginx or rclone serve WebDAV.
class PlainStore final : public StoreWrapper {
 public:
  using StoreWrapper::StoreWrapper;
  Capabilities capabilities() override { return {}; }
  Result<std::string> replace_if(const Key& k, std::string_view, std::string_view) override {
    return fail(Errc::unsupported, "plain store: no conditional replace of " + k.str());
  }
  Result<void> remove_if(const Key& k, std::string_view) override {
    return fail(Errc::unsupported, "plain store: no conditional remove of " + k.str());
  }
};

// Runs a hook before each replace, to let a contender act mid-claim.
class HookStore final : public StoreWrapper {
 public:
  using StoreWrapper::StoreWrapper;
  std::function<void(const Key&, std::string_view)> before_replace;
  Result<std::string> replace(const Key& k, std::string_view d) override {
    if (auto hook = std::exchange(before_replace, nullptr)) hook(k, d);
    return StoreWrapper::replace(k, d);
  }
};

class ModesTest : public ::testing::Test {
 protected:
  std::shared_ptr<FakeClock> clock = std::make_shared<FakeClock>();
  std::shared_ptr<ManualScheduler> scheduler = std::make_shared<ManualScheduler>(clock);
  std::shared_ptr<CapturingLogger> logger = std::make_shared<CapturingLogger>();
  std::shared_ptr<Store> memory = make_memory_store();
  std::shared_ptr<FailingStore> store = std::make_shared<FailingStore>(memory);

  GuardOptions options(std::string id, Mode mode) {
    std::string host = "host-" + id;
    return {.ttl = 30s,
            .id = std::move(id),
            .host = std::move(host),
            .pid = 100,
            .clock = clock,
            .scheduler = scheduler,
            .logger = logger,
            .mode = mode,
            .max_skew = 2s,
            .boot_id = "boot",
            .pid_ns = "pidns"};
  }
  // An exclusive holder `id` that ran on b's host and machine (machine-1)
  // in an earlier boot; b is given machine-1 by the test.
  GuardOptions earlier_boot_of_b(std::string id) {
    auto old = options(std::move(id), Mode::exclusive);
    old.host = "host-b";
    old.boot_id = "old-boot";
    old.machine_id = "machine-1";
    return old;
  }
  Guard guard(std::string id, Mode mode, std::shared_ptr<Store> s = nullptr) {
    return Guard::create(s ? s : store, options(std::move(id), mode)).value();
  }
  bool exists(std::string_view key) { return memory->get(Key::parse(key).value()).has_value(); }
  // b's exclusive claim beside a lease document that is not one: refused,
  // and the document and the store as they were.
  void refused_beside_a_garbage_lease() {
    const Key lease = Key::parse("instances.lease").value();
    ASSERT_TRUE(memory->replace(lease, "garbage"));
    auto b = guard("b", Mode::exclusive).claim();
    ASSERT_FALSE(b.has_value());
    EXPECT_EQ(b.error().error.code, Errc::another_instance);
    EXPECT_EQ(memory->get(lease)->data, "garbage");
    EXPECT_FALSE(exists("instances/b"));
  }
  void put_record(const Record& r) {
    ASSERT_TRUE(memory->replace(record_key(r.id).value(), encode_record(r)));
  }
  // A store on which b writes a claiming (or held: state "") record while
  // our guard settles, so its second scan sees it; b's record expires `b_for`
  // later (b crashed, or is still trying).
  std::shared_ptr<HookStore> contender_appears(Duration b_for, std::string state) {
    auto hook = std::make_shared<HookStore>(memory);
    hook->before_replace = [this, b_for, state](const Key&, std::string_view) {
      put_record({.id = "b",
                  .started_at = clock->wall(),
                  .expires_at = clock->wall() + b_for,
                  .state = state});
    };
    return hook;
  }
};

// ---- exclusive --------------------------------------------------------------

TEST_F(ModesTest, ExclusiveRefusesBesideALiveHolderAndNamesIt) {
  auto a = guard("a", Mode::exclusive).claim().value();
  auto b = guard("b", Mode::exclusive).claim();
  ASSERT_FALSE(b.has_value());
  EXPECT_EQ(b.error().error.code, Errc::another_instance);
  EXPECT_EQ(b.error().holder->record->id, "a");
  EXPECT_EQ(a.mode(), Mode::exclusive);
  EXPECT_TRUE(exists("instances/a"));
  EXPECT_TRUE(exists("instances.lease"));
}

TEST_F(ModesTest, ExclusiveEpochGrowsWithEveryAcquisition) {
  std::uint64_t last = 0;
  for (const char* id : {"a", "b", "a", "c"}) {
    auto c = guard(id, Mode::exclusive).claim().value();
    ASSERT_TRUE(c.epoch().has_value());
    EXPECT_GT(*c.epoch(), last) << id;
    last = *c.epoch();
    ASSERT_TRUE(c.stand_down());
  }
  EXPECT_EQ(last, 4u);
  EXPECT_TRUE(exists("instances.lease"));  // kept, released, so the epoch never goes back
  EXPECT_FALSE(exists("instances/c"));
}

TEST_F(ModesTest, ExclusiveTakesOverAnExpiredLeaseOnlyAfterTheSkewMargin) {
  auto a = guard("a", Mode::exclusive).claim().value();
  // a hangs: only the clock moves, its scheduled renewals never run.
  clock->advance(30s);  // a's lease expires now; the margin is 2 s more
  EXPECT_FALSE(guard("b", Mode::exclusive).claim().has_value());
  clock->advance(2s);
  auto b = guard("b", Mode::exclusive).claim();
  ASSERT_TRUE(b.has_value()) << b.error().error.message;
  EXPECT_EQ(b->epoch(), std::optional<std::uint64_t>(2));
}

TEST_F(ModesTest, ExclusiveRenewalThatFindsTheLeaseTakenIsALoss) {
  int lost_calls = 0;
  auto opts = options("a", Mode::exclusive);
  opts.on_lost = [&](const Error& e) {
    ++lost_calls;
    EXPECT_EQ(e.code, Errc::lost);
  };
  auto a = Guard::create(store, opts).value().claim().value();
  // Someone rewrites the lease behind a's back (a partition healed, say).
  const Key lease = Key::parse("instances.lease").value();
  ASSERT_TRUE(memory->replace(lease, memory->get(lease)->data));
  scheduler->advance(10s);
  EXPECT_EQ(lost_calls, 1);
  EXPECT_EQ(a.status(), ClaimStatus::lost);
  EXPECT_FALSE(a.active());
  EXPECT_NE(a.loss()->message.find("taken"), std::string::npos);
  EXPECT_FALSE(exists("instances/a"));
  scheduler->advance(1min);
  EXPECT_EQ(lost_calls, 1);
  EXPECT_EQ(scheduler->pending(), 0u);
  EXPECT_TRUE(a.stand_down());  // nothing left to do, and no error
}

TEST_F(ModesTest, AHolderCutOffFromItsStoreFencesItselfBeforeOthersCanTakeOver) {
  int lost_calls = 0;
  auto opts = options("a", Mode::exclusive);
  opts.on_lost = [&](const Error&) { ++lost_calls; };
  auto a = Guard::create(store, opts).value().claim().value();
  const MonoTime claimed = clock->monotonic();
  EXPECT_EQ(a.fence_deadline(), claimed + 28s);  // ttl - max_skew
  for (Op op :
       {Op::get, Op::create, Op::replace, Op::remove, Op::list, Op::replace_if, Op::remove_if}) {
    store->fail_on(op, Errc::unavailable);
  }
  scheduler->advance(27s);
  EXPECT_EQ(lost_calls, 0);
  EXPECT_TRUE(a.active());
  scheduler->advance(1s);
  EXPECT_EQ(lost_calls, 1);
  EXPECT_EQ(a.status(), ClaimStatus::lost);
  // Others, judging a's lease with their own margin, can take over only at
  // 30 s + 2 s: after a stopped.
  store->heal();
  EXPECT_FALSE(guard("b", Mode::exclusive).claim().has_value());
  clock->advance(4s);
  EXPECT_TRUE(guard("b", Mode::exclusive).claim().has_value());
}

TEST_F(ModesTest, SuccessfulRenewalsMoveTheFenceDeadline) {
  auto a = guard("a", Mode::exclusive).claim().value();
  for (int i = 1; i <= 6; ++i) {
    scheduler->advance(10s);
    EXPECT_EQ(a.fence_deadline(), clock->monotonic() + 28s);
  }
  EXPECT_TRUE(a.active());
}

// A guard stopped past its self-fencing deadline (SIGSTOP, a paused host)
// learns of it at its next wake-up: the renewal due long ago runs first, and
// must tell the holder the claim is lost before it asks the store anything.
TEST_F(ModesTest, ARenewalWokenPastTheFenceDeadlineLosesTheClaimBeforeAnyRequest) {
  auto calls = [&] {
    int n = 0;
    for (Op op :
         {Op::get, Op::create, Op::replace, Op::remove, Op::list, Op::replace_if, Op::remove_if}) {
      n += store->calls(op);
    }
    return n;
  };
  std::optional<int> calls_when_told;
  auto opts = options("a", Mode::exclusive);
  opts.on_lost = [&](const Error&) { calls_when_told = calls(); };
  auto a = Guard::create(store, opts).value().claim().value();
  scheduler->run_due();  // the history's upkeep after the claim
  const int before = calls();
  clock->advance(40s);  // paused: no task ran; renewal (10 s) and fence (28 s) are overdue
  EXPECT_EQ(a.status(), ClaimStatus::held);
  scheduler->run_due();
  ASSERT_TRUE(calls_when_told.has_value());
  EXPECT_EQ(*calls_when_told, before);  // told first: not one request before
  EXPECT_EQ(a.status(), ClaimStatus::lost);
  EXPECT_NE(a.loss()->message.find("no renewal succeeded"), std::string::npos) << a.loss()->message;
  EXPECT_EQ(store->calls(Op::replace_if), 0);  // the lease was never rewritten after the pause
  EXPECT_FALSE(exists("instances/a"));         // our record withdrawn, after the loss was told
}

TEST_F(ModesTest, ExclusiveNeverOverwritesAnUnreadableLease) { refused_beside_a_garbage_lease(); }

TEST_F(ModesTest, ExclusiveIsKeptOutByALiveOriginalGuard) {
  put_record({.id = "go-1", .started_at = clock->wall(), .expires_at = clock->wall() + 1min});
  auto b = guard("b", Mode::exclusive).claim();
  ASSERT_FALSE(b.has_value());
  EXPECT_EQ(b.error().holder->record->id, "go-1");
  EXPECT_FALSE(exists("instances/b"));
}

TEST_F(ModesTest, ExclusiveOnAStoreWithoutConditionalWritesRefusesClearly) {
  auto plain = std::make_shared<PlainStore>(memory);
  auto c = guard("a", Mode::exclusive, plain).claim();
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.error().error.code, Errc::unsupported);
  EXPECT_NE(c.error().error.message.find("--mode verify"), std::string::npos);
}

TEST_F(ModesTest, LosingTheCompareAndSetMeansReadingAgain) {
  // Between b's read of a released lease and its write, c takes the lease.
  auto first = guard("a", Mode::exclusive).claim().value();
  ASSERT_TRUE(first.stand_down());
  auto c_guard = guard("c", Mode::exclusive);
  std::optional<Claim> c_claim;
  // Just before b's compare-and-set on the lease it read, c takes the lease.
  struct Racer final : StoreWrapper {
    using StoreWrapper::StoreWrapper;
    std::function<void()> before_cas;
    Result<std::string> replace_if(const Key& k, std::string_view d, std::string_view v) override {
      if (auto f = std::exchange(before_cas, nullptr)) f();
      return StoreWrapper::replace_if(k, d, v);
    }
  };
  auto racer = std::make_shared<Racer>(memory);
  racer->before_cas = [&] { c_claim.emplace(c_guard.claim().value()); };
  auto b = guard("b", Mode::exclusive, racer).claim();
  ASSERT_FALSE(b.has_value());
  EXPECT_EQ(b.error().holder->record->id, "c");
  EXPECT_EQ(c_claim->epoch(), std::optional<std::uint64_t>(2));
}

// ---- verify -----------------------------------------------------------------

TEST_F(ModesTest, VerifyClaimsAStoreWithoutConditionalWrites) {
  auto plain = std::make_shared<PlainStore>(memory);
  auto a = guard("a", Mode::verify, plain).claim();
  ASSERT_TRUE(a.has_value()) << a.error().error.message;
  const Record r = decode_record(memory->get(record_key("a").value())->data).value();
  EXPECT_EQ(r.state, "");  // held
  EXPECT_EQ(r.mode, "verify");
  EXPECT_FALSE(guard("b", Mode::verify, plain).claim().has_value());
}

TEST_F(ModesTest, VerifyWaitsTheSettleTimeBetweenWriteAndScan) {
  auto opts = options("a", Mode::verify);
  opts.settle = 200ms;
  const MonoTime before = clock->monotonic();
  auto a = Guard::create(store, opts).value().claim();
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(clock->monotonic() - before, Duration{200ms});
}

TEST_F(ModesTest, VerifyContendersThatSeeEachOtherWithdrawAndTryAgain) {
  auto hook = contender_appears(1s, "claiming");
  const MonoTime before = clock->monotonic();
  auto a = guard("a", Mode::verify, hook).claim();
  ASSERT_TRUE(a.has_value()) << a.error().error.message;
  // b's record counted until its expiry plus the 2 s margin; a backed off
  // and tried again meanwhile instead of refusing.
  EXPECT_GE(clock->monotonic() - before, Duration{3s});
  EXPECT_LT(clock->monotonic() - before, Duration{10s});
  EXPECT_TRUE(logger->contains("collided with another claimer"));
}

TEST_F(ModesTest, VerifyRefusesAfterTheStartupTimeoutNamingAClaimerStillThere) {
  auto hook = contender_appears(1h, "claiming");
  auto opts = options("a", Mode::verify);
  opts.startup_timeout = 5s;
  const MonoTime before = clock->monotonic();
  auto a = Guard::create(hook, opts).value().claim();
  ASSERT_FALSE(a.has_value());
  EXPECT_EQ(a.error().error.code, Errc::another_instance);
  EXPECT_EQ(a.error().holder->record->id, "b");
  EXPECT_EQ(clock->monotonic() - before, Duration{5s});
  EXPECT_TRUE(exists("instances/b"));
  EXPECT_FALSE(exists("instances/a")) << "a must withdraw its claiming record";
}

TEST_F(ModesTest, VerifyRefusesAtOnceBesideAHolder) {
  auto hook = contender_appears(30s, "");  // b holds
  const MonoTime before = clock->monotonic();
  auto a = guard("a", Mode::verify, hook).claim();
  ASSERT_FALSE(a.has_value());
  EXPECT_EQ(a.error().holder->record->id, "b");
  EXPECT_EQ(clock->monotonic() - before, Duration{0});
  EXPECT_FALSE(exists("instances/a"));
}

TEST_F(ModesTest, VerifyRenewalScanMakesTheLaterOfTwoHoldersLose) {
  int a_lost = 0;
  auto opts = options("a", Mode::verify);
  opts.on_lost = [&](const Error&) { ++a_lost; };
  auto a = Guard::create(store, opts).value().claim().value();
  // An earlier holder appears (a healed partition): a claimed later, a loses.
  put_record(
      {.id = "z-earlier", .started_at = clock->wall() - 1min, .expires_at = clock->wall() + 30s});
  scheduler->advance(10s);
  EXPECT_EQ(a_lost, 1);
  EXPECT_NE(a.loss()->message.find("z-earlier"), std::string::npos);
}

TEST_F(ModesTest, VerifyRenewalIgnoresContendersStillClaimingAndLaterHolders) {
  int a_lost = 0;
  auto opts = options("a", Mode::verify);
  opts.on_lost = [&](const Error&) { ++a_lost; };
  auto a = Guard::create(store, opts).value().claim().value();
  put_record({.id = "claimer",
              .started_at = clock->wall(),
              .expires_at = clock->wall() + 30s,
              .state = "claiming"});
  put_record({.id = "later", .started_at = clock->wall() + 1s, .expires_at = clock->wall() + 30s});
  scheduler->advance(10s);
  EXPECT_EQ(a_lost, 0);
  EXPECT_TRUE(logger->contains("a later instance holds too"));
}

// ---- auto, skew, same host, wait ----------------------------------------------

TEST_F(ModesTest, AutoPicksTheStrongestTheStoreSupports) {
  EXPECT_EQ(guard("a", Mode::automatic).resolve_mode().value(), Mode::exclusive);
  auto plain = std::make_shared<PlainStore>(memory);
  EXPECT_EQ(guard("a", Mode::automatic, plain).resolve_mode().value(), Mode::verify);
  auto c = guard("a", Mode::automatic).claim().value();
  EXPECT_EQ(c.mode(), Mode::exclusive);
  EXPECT_TRUE(c.epoch().has_value());
}

// A store whose capabilities cannot be learned for its first `unknown_for`
// calls (its server is down, or refuses us), then are those of memory.
class UnprobedStore final : public StoreWrapper {
 public:
  UnprobedStore(std::shared_ptr<Store> target, Error why, int unknown_for)
      : StoreWrapper(std::move(target)), why_(std::move(why)), unknown_for_(unknown_for) {}
  Capabilities capabilities() override {
    if (calls_++ < unknown_for_) return Capabilities{.unknown = why_};
    return StoreWrapper::capabilities();
  }
  int calls() const { return calls_; }

 private:
  Error why_;
  int unknown_for_;
  int calls_ = 0;
};

TEST_F(ModesTest, AutoWaitsForAStoreThatCannotBeReachedYet) {
  auto down = std::make_shared<UnprobedStore>(
      store, Error{Errc::unavailable, "PUT http://dav: connection refused"}, 3);
  const MonoTime before = clock->monotonic();
  auto c = guard("a", Mode::automatic, down).claim();
  ASSERT_TRUE(c.has_value()) << c.error().error.message;
  EXPECT_EQ(c->mode(), Mode::exclusive) << "never verify because the probe failed";
  EXPECT_GT(clock->monotonic() - before, Duration{0});
  EXPECT_LT(clock->monotonic() - before, Duration{30s});
  EXPECT_TRUE(logger->contains("cannot learn what the store supports yet"));
  EXPECT_TRUE(logger->contains("the store has"));  // the claimed line's mode_reason
}

TEST_F(ModesTest, AutoRefusesWithTheRealCauseOnceTheStartupTimeoutPassed) {
  auto down = std::make_shared<UnprobedStore>(
      store, Error{Errc::unavailable, "PUT https://dav: TLS handshake failed"}, 1000);
  auto opts = options("a", Mode::automatic);
  opts.startup_timeout = 5s;
  const MonoTime before = clock->monotonic();
  auto c = Guard::create(down, opts).value().claim();
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.error().error.code, Errc::unavailable);
  EXPECT_NE(c.error().error.message.find("TLS handshake failed"), std::string::npos)
      << c.error().error.message;
  EXPECT_EQ(clock->monotonic() - before, Duration{5s});
  EXPECT_FALSE(exists("instances/a"));
}

TEST_F(ModesTest, AutoRefusesAtOnceWhenTheStoreRefusesOurCredentials) {
  auto refused = std::make_shared<UnprobedStore>(
      store, Error{Errc::permission, "PUT http://dav: 401 Unauthorized"}, 1000);
  const MonoTime before = clock->monotonic();
  for (Mode mode : {Mode::automatic, Mode::exclusive}) {
    auto c = guard("a", mode, refused).claim();
    ASSERT_FALSE(c.has_value());
    EXPECT_EQ(c.error().error.code, Errc::permission);
    EXPECT_NE(c.error().error.message.find("401 Unauthorized"), std::string::npos);
  }
  EXPECT_EQ(clock->monotonic() - before, Duration{0});
  EXPECT_EQ(refused->calls(), 2);
}

TEST_F(ModesTest, OtherHostsRecordsStayLiveForTheSkewMargin) {
  put_record({.id = "far",
              .started_at = clock->wall(),
              .expires_at = clock->wall() + 10s,
              .host = "elsewhere"});
  clock->advance(11s);  // expired by 1 s, within the 2 s margin
  EXPECT_FALSE(guard("a", Mode::verify).claim().has_value());
  EXPECT_TRUE(guard("a2", Mode::announce).claim().has_value()) << "announce keeps no margin";
}

TEST_F(ModesTest, ARecordOfADeadProcessOnThisHostIsStaleAtOnce) {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);  // now a pid with no process
  put_record({.id = "crashed",
              .started_at = clock->wall(),
              .expires_at = clock->wall() + 1h,
              .host = "host-a",
              .pid = child,
              .boot_id = "boot",
              .pid_ns = "pidns"});
  auto a = guard("a", Mode::verify).claim();
  ASSERT_TRUE(a.has_value()) << a.error().error.message;
  EXPECT_TRUE(exists("instances/crashed"));  // not on the claim's path
  scheduler->run_due();                      // the upkeep after the claim
  EXPECT_FALSE(exists("instances/crashed"));
}

TEST_F(ModesTest, AnInjectedProcessProbeDecidesWhetherAProcessOnThisHostIsGone) {
  put_record({.id = "other",
              .started_at = clock->wall(),
              .expires_at = clock->wall() + 1h,
              .host = "host-a",
              .pid = 4242,
              .boot_id = "boot",
              .pid_ns = "pidns"});
  std::vector<std::int64_t> asked;
  auto opts = options("a", Mode::verify);
  opts.process_gone = [&](std::int64_t pid) {
    asked.push_back(pid);
    return false;  // alive, whatever the kernel says of 4242
  };
  EXPECT_FALSE(Guard::create(store, opts).value().claim().has_value());
  EXPECT_FALSE(asked.empty());
  EXPECT_EQ(asked.front(), 4242);
  opts.process_gone = [](std::int64_t) { return true; };
  EXPECT_TRUE(Guard::create(store, opts).value().claim().has_value());
}

TEST_F(ModesTest, ALiveProcessOrAnotherBootKeepsTheRecordLive) {
  put_record({.id = "alive",
              .started_at = clock->wall(),
              .expires_at = clock->wall() + 1h,
              .host = "host-a",
              .pid = ::getpid(),
              .boot_id = "boot",
              .pid_ns = "pidns"});
  EXPECT_FALSE(guard("a", Mode::verify).claim().has_value());
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);
  put_record({.id = "alive",
              .started_at = clock->wall(),
              .expires_at = clock->wall() + 1h,
              .host = "host-a",
              .pid = child,
              .boot_id = "another-boot",
              .pid_ns = "pidns"});
  EXPECT_FALSE(guard("a", Mode::verify).claim().has_value());
}

// ---- a holder of an earlier boot of this machine ---------------------------

// Our guard "a" on host-a, machine "machine-1", whose current boot began
// `up` ago; a record of that host and machine under `boot`, last written
// `written` after our boot began (negative: before), with a 30 s window (a
// renewal every 10 s) and 2 s of skew.
class EarlierBootTest : public ModesTest {
 protected:
  GuardOptions ours(Duration up = 0s) {
    auto opts = options("a", Mode::verify);
    opts.machine_id = "machine-1";
    opts.booted_at = clock->wall() - up;
    return opts;
  }
  void put_holder(Duration written, std::string machine = "machine-1",
                  std::string boot = "old-boot", std::string host = "host-a") {
    const WallTime at = clock->wall() + written;
    put_record({.id = "old",
                .started_at = at - 1h,
                .expires_at = at + 30s,
                .host = std::move(host),
                .pid = 4242,
                .renewed_at = at,
                .boot_id = std::move(boot),
                .machine_id = std::move(machine),
                .pid_ns = "pidns"});
  }
  Result<Claim> claim(const GuardOptions& opts) {
    auto claimed = Guard::create(store, opts).value().claim();
    if (!claimed) return std::unexpected(claimed.error().error);
    return std::move(*claimed);
  }
};

TEST_F(EarlierBootTest, ARecordOfAnEarlierBootOfThisMachineIsDeadOnceOverdue) {
  put_holder(-20s);  // written 20 s before this boot; it would expire in 10 s
  auto a = claim(ours());
  ASSERT_TRUE(a.has_value()) << a.error().message;
  scheduler->run_due();  // the upkeep removes it like any stale record
  EXPECT_FALSE(exists("instances/old"));
}

TEST_F(EarlierBootTest, ItWaitsUntilAHolderThatRenewsWouldHaveRewrittenIt) {
  // Written 5 s before our boot: a clone of this machine that is alive
  // rewrites it by 10 s after the write; judged dead only past that plus
  // the skew, long before it expires (25 s after our boot).
  put_holder(-5s);
  EXPECT_FALSE(claim(ours()).has_value());
  clock->advance(6s);
  EXPECT_FALSE(claim(ours(6s)).has_value());
  clock->advance(1s);  // 10 s after the write, plus 2 s
  EXPECT_TRUE(claim(ours(7s)).has_value());
}

TEST_F(EarlierBootTest, ARecordWrittenAfterThisBootBeganIsAnotherHostsAndIsWarnedOf) {
  put_holder(-5s);  // rewritten 5 s ago, but our boot began 10 s ago
  auto a = claim(ours(10s));
  ASSERT_FALSE(a.has_value());
  EXPECT_EQ(a.error().code, Errc::another_instance);
  EXPECT_TRUE(logger->contains("another host shares this machine id"));
}

TEST_F(EarlierBootTest, AnotherMachineIdAHostNameOrThisBootKeepItLive) {
  for (auto [machine, boot, host] :
       {std::tuple{"machine-2", "old-boot", "host-a"}, std::tuple{"", "old-boot", "host-a"},
        std::tuple{"machine-1", "old-boot", "host-b"}, std::tuple{"machine-1", "", "host-a"}}) {
    put_holder(-20s, machine, boot, host);
    EXPECT_FALSE(claim(ours()).has_value()) << machine << " " << boot << " " << host;
  }
  auto unknown = ours();
  unknown.machine_id = "";  // ours could not be read: the rule never applies
  put_holder(-20s, "");
  EXPECT_FALSE(claim(unknown).has_value());
}

TEST_F(EarlierBootTest, StatusSaysSoAndReleaseTakesItWithoutForce) {
  // status and release judge as this machine is: its real machine id, host
  // name and boot (read, never changed).
  const std::string machine = this_machine_id();
  if (machine.empty()) GTEST_SKIP() << "this machine has no machine id";
  std::array<char, 256> name{};
  ASSERT_EQ(::gethostname(name.data(), name.size() - 1), 0);
  const WallTime now =
      std::chrono::time_point_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now());
  const WallTime written = this_boot_began() - 1h;
  put_record({.id = "old",
              .started_at = written,
              .expires_at = now + 1h,  // live for an hour more by its expiry
              .host = name.data(),
              .pid = 4242,
              .renewed_at = written,
              .boot_id = "an-earlier-boot",
              .machine_id = machine,
              .pid_ns = "pidns"});
  auto entries = list_instances(*store, now);
  ASSERT_TRUE(entries.has_value());
  ASSERT_EQ(entries->size(), 1u);
  EXPECT_FALSE((*entries)[0].live);
  EXPECT_TRUE((*entries)[0].from_earlier_boot);
  EXPECT_TRUE(release_instance(*store, "old", now, false).has_value());
  EXPECT_FALSE(exists("instances/old"));
}

TEST_F(ModesTest, WaitingClaimsOnceTheHolderStandsDown) {
  auto holder = guard("a", Mode::exclusive).claim().value();
  int told = 0;
  WaitOptions wait{.on_wait = [&](const ClaimError& e) {
    ++told;
    EXPECT_EQ(e.holder->record->id, "a");
    ASSERT_TRUE(holder.stand_down());  // the holder leaves while b waits
  }};
  const MonoTime start = clock->monotonic();
  auto b = guard("b", Mode::exclusive).claim_waiting(wait);
  ASSERT_TRUE(b.has_value()) << b.error().error.message;
  EXPECT_EQ(told, 1);
  EXPECT_LE(clock->monotonic() - start, Duration{500ms}) << "one poll at most";
}

TEST_F(ModesTest, WaitingGivesUpAfterTheTimeout) {
  auto holder = guard("a", Mode::exclusive).claim().value();
  const MonoTime start = clock->monotonic();
  auto b = guard("b", Mode::exclusive).claim_waiting({.timeout = 5s});
  ASSERT_FALSE(b.has_value());
  EXPECT_EQ(b.error().error.code, Errc::another_instance);
  EXPECT_EQ(clock->monotonic() - start, Duration{5s});
}

TEST_F(ModesTest, WaitingClaimsWhenTheHolderExpires) {
  put_record({.id = "gone",
              .started_at = clock->wall(),
              .expires_at = clock->wall() + 3s,
              .host = "elsewhere"});
  auto b = guard("b", Mode::verify).claim_waiting({});
  ASSERT_TRUE(b.has_value());
  EXPECT_GE(clock->wall(), parse_rfc3339("2026-01-01T00:00:05Z").value());  // 3 s + 2 s margin
}

TEST_F(ModesTest, AStopRequestEndsTheWait) {
  auto holder = guard("a", Mode::exclusive).claim().value();
  std::stop_source stop;
  auto b = guard("b", Mode::exclusive)
               .claim_waiting({.on_wait = [&](const ClaimError&) { stop.request_stop(); }},
                              stop.get_token());
  ASSERT_FALSE(b.has_value());
  EXPECT_EQ(b.error().error.code, Errc::cancelled);
}

// A store that can tell when a key changes (as the directory store's lock
// does): answers await_change from a script, and runs `on_wait` inside it
// (what happens while the waiter blocks).
class WakingStore final : public StoreWrapper {
 public:
  using StoreWrapper::StoreWrapper;
  std::vector<bool> answers;       // in order; then unsupported
  std::function<void()> on_wait;   // runs inside each await_change
  std::vector<Key> keys;           // the keys waited on
  std::vector<Duration> timeouts;  // and for how long at most
  Result<bool> await_change(const Key& key, Duration timeout, std::stop_token) override {
    keys.push_back(key);
    timeouts.push_back(timeout);
    if (on_wait) on_wait();
    if (keys.size() > answers.size()) return fail(Errc::unsupported, "no more answers");
    return answers[keys.size() - 1];
  }
};

TEST_F(ModesTest, AWaitingClaimIsWokenByTheStoreInsteadOfPolling) {
  auto holder = guard("a", Mode::exclusive).claim().value();
  auto waking = std::make_shared<WakingStore>(store);
  waking->answers = {true};
  waking->on_wait = [&] { ASSERT_TRUE(holder.stand_down()); };  // it leaves while b waits
  const MonoTime start = clock->monotonic();
  auto b = guard("b", Mode::exclusive, waking).claim_waiting({});
  ASSERT_TRUE(b.has_value()) << b.error().error.message;
  ASSERT_EQ(waking->keys.size(), 1u);
  EXPECT_EQ(waking->keys[0].str(), "instances.lease");  // the key that refused b
  EXPECT_LE(waking->timeouts[0], Duration{125ms});      // no longer than the poll it replaces
  EXPECT_EQ(clock->monotonic() - start, Duration{0}) << "woken, so it never slept";
}

TEST_F(ModesTest, AWaitThatTimesOutIsAPollAndTheNextWaitsLonger) {
  auto holder = guard("a", Mode::exclusive).claim().value();
  auto waking = std::make_shared<WakingStore>(store);
  waking->answers = {false, false};
  waking->on_wait = [&] {
    if (waking->keys.size() == 2) {
      ASSERT_TRUE(holder.stand_down());
    }
  };
  auto b = guard("b", Mode::exclusive, waking).claim_waiting({});
  ASSERT_TRUE(b.has_value()) << b.error().error.message;
  ASSERT_EQ(waking->timeouts.size(), 2u);
  // The poll doubles (100 ms, then 200 ms), each wait 3/4 to 5/4 of it.
  EXPECT_GE(waking->timeouts[0], Duration{75ms});
  EXPECT_LE(waking->timeouts[0], Duration{125ms});
  EXPECT_GE(waking->timeouts[1], Duration{150ms});
  EXPECT_LE(waking->timeouts[1], Duration{250ms});
}

TEST_F(ModesTest, WakeUpsThatEndInRefusalsFallBackToPolling) {
  // The store keeps saying "changed" while the holder stays: after two such
  // wake-ups the waiter sleeps its poll on the clock before it asks again.
  auto holder = guard("a", Mode::exclusive).claim().value();
  auto waking = std::make_shared<WakingStore>(store);
  waking->answers = {true, true, true, true};
  const MonoTime start = clock->monotonic();
  auto b = guard("b", Mode::exclusive, waking).claim_waiting({.timeout = 1s});
  ASSERT_FALSE(b.has_value());
  EXPECT_EQ(b.error().error.code, Errc::another_instance);
  EXPECT_EQ(clock->monotonic() - start, Duration{1s});
  // Two wake-ups, a poll, two more, polls: never more wake-ups than polls allow.
  EXPECT_LE(waking->keys.size(), 8u);
  EXPECT_GE(waking->keys.size(), 4u);
}

// On a compare-and-set store the lease document is the lock: one written by
// an earlier boot of this machine (its machine id and host, another boot
// id) is taken as soon as its holder is a third of its window plus max-skew
// overdue, as its record is, not after its expiry; a lease of another
// machine id keeps its holder until it expires.
TEST_F(ModesTest, AnExclusiveLeaseOfAnEarlierBootOfThisMachineIsTakenOnceOverdue) {
  auto a = Guard::create(store, earlier_boot_of_b("a")).value().claim().value();
  auto opts = options("b", Mode::exclusive);
  opts.machine_id = "machine-1";
  opts.booted_at = clock->wall() + 5s;  // the host rebooted 5 s after a's claim
  clock->advance(10s);                  // under a third of the window (10 s) plus max-skew
  EXPECT_FALSE(Guard::create(store, opts).value().claim().has_value());
  clock->advance(10s);  // 20 s: overdue, though the lease runs 10 s more
  auto on_another_machine = opts;
  on_another_machine.machine_id = "machine-2";
  auto other = Guard::create(store, on_another_machine).value().claim();
  ASSERT_FALSE(other.has_value());
  EXPECT_EQ(other.error().holder->record->id, "a");
  auto b = Guard::create(store, opts).value().claim();
  ASSERT_TRUE(b.has_value()) << b.error().error.message;
  EXPECT_EQ(b->epoch(), std::optional<std::uint64_t>(2));
}

TEST_F(ModesTest, BadTimingOptionsAreRejected) {
  auto o = options("a", Mode::verify);
  o.max_skew = 15s;  // half the ttl
  EXPECT_EQ(Guard::create(store, o).error().code, Errc::invalid);
  o = options("a", Mode::verify);
  o.settle = 10s;  // a third of the ttl
  EXPECT_EQ(Guard::create(store, o).error().code, Errc::invalid);
}

TEST(Mode, ParsesAndPrints) {
  for (Mode m : {Mode::automatic, Mode::announce, Mode::verify, Mode::exclusive}) {
    EXPECT_EQ(parse_mode(to_string(m)).value(), m);
  }
  EXPECT_EQ(parse_mode("lock").error().code, Errc::invalid);
}

}  // namespace
}  // namespace instance

namespace instance {
namespace {

// ---- exclusive on a native lease (memory store with a lease clock) ---------

class NativeLeaseTest : public ModesTest {
 protected:
  void SetUp() override {
    memory = make_memory_store(clock);
    store = std::make_shared<FailingStore>(memory);
  }
};

// The same, on a store that takes, renews and ends the lease one call after
// another (false) and on one that does each in one request (true, as Redis
// and PostgreSQL do: Capabilities::atomic_lease).
class LeaseTest : public NativeLeaseTest, public ::testing::WithParamInterface<bool> {
 protected:
  void SetUp() override {
    memory = make_memory_store({.lease_clock = clock, .atomic_lease = GetParam()});
    store = std::make_shared<FailingStore>(memory);
  }
};
INSTANTIATE_TEST_SUITE_P(Lease, LeaseTest, ::testing::Bool(),
                         [](const auto& param) { return param.param ? "atomic" : "steps"; });

// Runs before_unlock (once) just before the first unlock reaches the store:
// a rival's whole claim fits between a successor's judgement and its unlock.
struct RacingUnlock final : StoreWrapper {
  using StoreWrapper::StoreWrapper;
  std::function<void()> before_unlock;
  Result<void> unlock(const Key& k, std::string_view token) override {
    if (auto hook = std::exchange(before_unlock, nullptr)) hook();
    return StoreWrapper::unlock(k, token);
  }
};

// A pid with no process: a child that exited and was reaped.
pid_t reaped_pid() {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  EXPECT_EQ(::waitpid(child, nullptr, 0), child);
  return child;
}

TEST_P(LeaseTest, ADeadHolderOnThisHostHasItsLockEndedAtOnceByItsToken) {
  auto opts = options("a", Mode::exclusive);
  opts.host = "host-b";  // b's host, boot and pid namespace
  opts.pid = reaped_pid();
  auto a = Guard::create(store, opts).value().claim().value();
  // The store would hold a's lock for its whole ttl (30 s); b starts now.
  auto b = guard("b", Mode::exclusive).claim();
  ASSERT_TRUE(b.has_value()) << b.error().error.message;
  EXPECT_EQ(b->epoch(), std::optional<std::uint64_t>(2));
  EXPECT_TRUE(logger->contains("ended the store's lock of a holder whose process on this host"));
}

TEST_P(LeaseTest, AHolderOfAnEarlierBootOfThisMachineHasItsLockEndedByItsToken) {
  auto a = Guard::create(store, earlier_boot_of_b("a")).value().claim().value();
  clock->advance(20s);  // the host rebooted 5 s ago; the store holds a's lock for 10 s more
  auto opts = options("b", Mode::exclusive);
  opts.machine_id = "machine-1";
  opts.booted_at = clock->wall() - 5s;
  auto on_another_machine = opts;
  on_another_machine.machine_id = "machine-2";
  EXPECT_FALSE(Guard::create(store, on_another_machine).value().claim().has_value());
  auto b = Guard::create(store, opts).value().claim();
  ASSERT_TRUE(b.has_value()) << b.error().error.message;
  EXPECT_EQ(b->epoch(), std::optional<std::uint64_t>(2));
  EXPECT_TRUE(
      logger->contains("ended the store's lock of a holder that ran in an earlier boot of this"));
}

TEST_P(LeaseTest, ALiveHolderOrOneOnAnotherHostKeepsItsLock) {
  auto opts = options("a", Mode::exclusive);
  opts.host = "host-b";
  opts.pid = ::getppid();  // alive
  auto a = Guard::create(store, opts).value().claim().value();
  auto b = guard("b", Mode::exclusive).claim();
  ASSERT_FALSE(b.has_value());
  EXPECT_EQ(b.error().holder->record->id, "a");
  ASSERT_TRUE(a.stand_down());

  auto far = options("far", Mode::exclusive);
  far.host = "elsewhere";  // its pid means nothing here
  far.pid = reaped_pid();
  auto f = Guard::create(store, far).value().claim().value();
  auto b2 = guard("b", Mode::exclusive).claim();
  ASSERT_FALSE(b2.has_value());
  EXPECT_EQ(b2.error().holder->record->id, "far");
  EXPECT_FALSE(logger->contains("ended the store's lock"));
}

TEST_P(LeaseTest, OfTwoSuccessorsOfADeadHolderOnlyOneGetsTheLock) {
  auto opts = options("a", Mode::exclusive);
  opts.host = "host-b";
  opts.pid = reaped_pid();
  auto a = Guard::create(store, opts).value().claim().value();
  // c reads a's lease, then, before its unlock lands, b ends a's lock and
  // takes the store: c's unlock of a's token ends nothing, and c is refused.
  auto racing = std::make_shared<RacingUnlock>(store);
  std::optional<Claim> b;
  racing->before_unlock = [&] {
    auto claimed = guard("b", Mode::exclusive).claim();
    ASSERT_TRUE(claimed.has_value()) << claimed.error().error.message;
    b.emplace(std::move(*claimed));
  };
  auto opts_c = options("c", Mode::exclusive);
  opts_c.host = "host-b";
  auto c = Guard::create(racing, opts_c).value().claim();
  ASSERT_TRUE(b.has_value());
  EXPECT_FALSE(c.has_value()) << "b and c would both hold";
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.error().holder->record->id, "b");
  EXPECT_TRUE(b->active());
}

// A store whose servers must agree on a lock (an etcd cluster) says so in
// its capabilities; the guarantee line carries its words, once.
class AgreeingStore final : public StoreWrapper {
 public:
  using StoreWrapper::StoreWrapper;
  Capabilities capabilities() override {
    Capabilities caps = StoreWrapper::capabilities();
    caps.agreement = "a majority (2 of 3) must agree";
    return caps;
  }
};

TEST_P(LeaseTest, TheGuaranteeLineNamesWhatTheStoresServersMustAgreeOn) {
  store = std::make_shared<FailingStore>(std::make_shared<AgreeingStore>(memory));
  auto g = guard("a", Mode::automatic);
  for (int round = 0; round < 2; ++round) {
    auto a = g.claim().value();
    const std::string line(a.guarantee());
    EXPECT_NE(line.find("store's own lock"), std::string::npos) << line;
    EXPECT_TRUE(line.ends_with("; a majority (2 of 3) must agree")) << line;
    EXPECT_EQ(line.find("agree"), line.rfind("agree")) << line;
    ASSERT_TRUE(a.stand_down());
  }
}

TEST_P(LeaseTest, TheStoresLockDecidesWhoHolds) {
  auto a = guard("a", Mode::automatic).claim().value();
  EXPECT_EQ(a.mode(), Mode::exclusive);
  EXPECT_NE(a.guarantee().find("store's own lock"), std::string_view::npos);
  auto b = guard("b", Mode::exclusive).claim();
  ASSERT_FALSE(b.has_value());
  EXPECT_EQ(b.error().error.code, Errc::another_instance);
  ASSERT_TRUE(b.error().holder->record.has_value());
  EXPECT_EQ(b.error().holder->record->id, "a");
  ASSERT_TRUE(a.stand_down());
  auto b2 = guard("b", Mode::exclusive).claim();
  ASSERT_TRUE(b2.has_value());
  EXPECT_EQ(b2->epoch(), std::optional<std::uint64_t>(2));
}

TEST_P(LeaseTest, ALockThatExpiredOnTheStoreIsTakenOverWithTheNextEpoch) {
  auto a = guard("a", Mode::exclusive).claim().value();
  clock->advance(30s);  // a hangs; the store's lock expires on the store's clock
  // a's record is still live by the skew margin, but a's lock is gone.
  auto b = guard("b", Mode::exclusive).claim();
  ASSERT_TRUE(b.has_value()) << b.error().error.message;
  EXPECT_EQ(b->epoch(), std::optional<std::uint64_t>(2));
}

TEST_P(LeaseTest, ARefusedRefreshIsALoss) {
  int lost = 0;
  auto opts = options("a", Mode::exclusive);
  opts.on_lost = [&](const Error&) { ++lost; };
  auto a = Guard::create(store, opts).value().claim().value();
  clock->advance(31s);  // the lock expired before a could refresh it (a was paused)
  auto b = guard("b", Mode::exclusive).claim().value();
  scheduler->run_due();  // a's overdue renewal: the refresh is refused
  EXPECT_EQ(lost, 1);
  EXPECT_EQ(a.status(), ClaimStatus::lost);
  EXPECT_TRUE(b.active());
}

// A store that numbers its lock grants itself (Redis INCR, a PostgreSQL
// sequence, an etcd revision).
class CountingLockStore final : public StoreWrapper {
 public:
  using StoreWrapper::StoreWrapper;
  std::uint64_t next = 41;
  Result<LockGrant> lock(const Key& key, Duration ttl, std::string_view owner) override {
    auto grant = StoreWrapper::lock(key, ttl, owner);
    if (grant) grant->epoch = next;
    return grant;
  }
};

TEST_F(NativeLeaseTest, TheStoresOwnLockEpochIsTheFencingEpochAndNeverGoesBack) {
  auto counting = std::make_shared<CountingLockStore>(store);
  auto a = guard("a", Mode::exclusive, counting).claim().value();
  EXPECT_EQ(a.epoch(), std::optional<std::uint64_t>(41));  // the store's count, not 1
  ASSERT_TRUE(a.stand_down());
  counting->next = 3;  // the store's counter was reset (a server without persistence)
  auto b = guard("b", Mode::exclusive, counting).claim().value();
  EXPECT_EQ(b.epoch(), std::optional<std::uint64_t>(42)) << "the lease document is the floor";
  EXPECT_TRUE(logger->contains("lock epoch is behind"));
}

// A store that grants its own lock timeout whatever the ttl asked, as nginx's
// dav_ext lock zone does: the lock really lapses after `grant` on the fake
// clock, and its grant says so.
class GrantingStore final : public StoreWrapper {
 public:
  GrantingStore(std::shared_ptr<Store> target, Duration granted)
      : StoreWrapper(std::move(target)), grant(granted) {}
  Duration grant;
  Result<LockGrant> lock(const Key& key, Duration, std::string_view owner) override {
    auto taken = StoreWrapper::lock(key, grant, owner);
    if (taken) taken->granted = grant;
    return taken;
  }
  Result<Duration> refresh_lock(const Key& key, std::string_view token, Duration) override {
    auto kept = StoreWrapper::refresh_lock(key, token, grant);
    if (!kept) return kept;
    return grant;
  }
};

TEST_F(NativeLeaseTest, AShorterGrantSetsTheRenewalPeriodAndTheFenceAndNobodyOverlaps) {
  // ttl 30 s would renew every 10 s; the store holds the lock for 9 s only.
  auto granting = std::make_shared<GrantingStore>(store, 9s);
  const MonoTime since = clock->monotonic();
  auto a = guard("a", Mode::exclusive, granting).claim().value();
  EXPECT_EQ(a.fence_deadline(), since + 9s - 2s) << "grant - max-skew, not ttl - max-skew";
  scheduler->advance(0s);  // the history's upkeep, due at once after the claim
  EXPECT_EQ(scheduler->next_due(), std::optional<Duration>(3s)) << "grant / 3, not ttl / 3";
  EXPECT_TRUE(logger->contains("claimed"));
  // Hold for well past the grant (and past ttl/3): every renewal lands
  // before the store's lock lapses, so a second guard is refused throughout.
  for (int i = 0; i < 15; ++i) {
    scheduler->advance(3s);
    ASSERT_TRUE(a.active()) << "after " << (i + 1) * 3 << " s";
    auto b = guard("b", Mode::exclusive, granting).claim();
    ASSERT_FALSE(b.has_value()) << "b took the lock after " << (i + 1) * 3 << " s";
    EXPECT_EQ(b.error().error.code, Errc::another_instance);
  }
}

TEST_F(NativeLeaseTest, AGrantTooShortToRenewSafelyRefusesTheClaimAndFreesTheLock) {
  // max-skew 2 s: a grant must be at least 6 s.
  auto granting = std::make_shared<GrantingStore>(store, 5s);
  auto a = guard("a", Mode::exclusive, granting).claim();
  ASSERT_FALSE(a.has_value());
  EXPECT_EQ(a.error().error.code, Errc::invalid);
  EXPECT_NE(a.error().error.message.find("granted its lock for only 5s"), std::string::npos)
      << a.error().error.message;
  EXPECT_NE(a.error().error.message.find("at least 6s"), std::string::npos);
  granting->grant = 30s;
  EXPECT_TRUE(guard("b", Mode::exclusive, granting).claim().has_value()) << "the lock was freed";
}

TEST_F(NativeLeaseTest, ARefreshWithAShorterGrantAdaptsOrLosesTheClaim) {
  auto granting = std::make_shared<GrantingStore>(store, 30s);
  int lost = 0;
  auto opts = options("a", Mode::exclusive);
  opts.on_lost = [&](const Error&) { ++lost; };
  auto a = Guard::create(granting, opts).value().claim().value();
  granting->grant = 12s;    // the server's timeout was lowered
  scheduler->advance(10s);  // the first renewal: granted 12 s now
  ASSERT_TRUE(a.active());
  EXPECT_TRUE(logger->contains("lock grant changed"));
  EXPECT_EQ(scheduler->next_due(), std::optional<Duration>(4s)) << "12 s / 3";
  EXPECT_EQ(a.fence_deadline(), clock->monotonic() + 10s);
  granting->grant = 3s;  // too short to renew safely: give the claim up
  scheduler->advance(4s);
  EXPECT_EQ(lost, 1);
  ASSERT_TRUE(a.loss().has_value());
  EXPECT_NE(a.loss()->message.find("too short"), std::string::npos) << a.loss()->message;
}

TEST_F(NativeLeaseTest, ALongerGrantIsTheExpiryTheLeaseAndRecordShow) {
  auto granting = std::make_shared<GrantingStore>(store, 90s);
  const WallTime now = clock->wall();
  auto a = guard("a", Mode::exclusive, granting).claim().value();
  scheduler->advance(0s);  // the history's upkeep, due at once after the claim
  EXPECT_EQ(scheduler->next_due(), std::optional<Duration>(10s)) << "still ttl / 3";
  EXPECT_EQ(a.record().expires_at, now + 90s);
  const auto lease = memory->get(Key::parse("instances.lease").value());
  ASSERT_TRUE(lease.has_value());
  EXPECT_NE(lease->data.find(format_rfc3339(now + 90s)), std::string::npos) << lease->data;
  // A crashed holder: the store keeps the lock for its 90 s, and the refusal
  // names that expiry, not the ttl's.
  clock->advance(45s);
  auto b = guard("b", Mode::exclusive, granting).claim();
  ASSERT_FALSE(b.has_value());
  ASSERT_TRUE(b.error().holder->record.has_value());
  EXPECT_EQ(b.error().holder->record->expires_at, now + 90s);
  EXPECT_GT(b.error().holder->record->expires_at, clock->wall()) << "not told expired";
}

// ---- exclusive where locks outlive their holders (phodav, sabre/dav) ------

// A memory store whose locks never expire, as phodav's: the guard must end
// the lock of a holder it proved fenced, and never a live holder's.
class StaleLockTest : public ModesTest {
 protected:
  void SetUp() override {
    memory = make_memory_store({.lease_clock = clock, .locks_outlive_holders = true});
    store = std::make_shared<FailingStore>(memory);
  }
  const Key lock = Key::parse("instances.lock").value();
  // What a guard that crashed right after its lock leaves: the lock, with the
  // owner text a guard writes, and no lease document naming it.
  std::string lock_as_guard(std::string_view id, WallTime at, Duration ttl) {
    const std::string owner =
        R"({"instance_guard":")" + std::string(id) + R"(","locked_at":")" + format_rfc3339(at) +
        R"(","ttl_ms":)" +
        std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(ttl).count()) + "}";
    return memory->lock(lock, ttl, owner).value().token;
  }
};

TEST_F(StaleLockTest, AHolderThatStoppedRenewingLosesItsLockOnlyPastItsExpiryPlusTheSkewMargin) {
  int lost = 0;
  auto opts = options("a", Mode::automatic);
  opts.on_lost = [&](const Error&) { ++lost; };
  auto a = Guard::create(store, opts).value().claim().value();
  EXPECT_EQ(a.mode(), Mode::exclusive);
  EXPECT_NE(a.guarantee().find("judged on the guards' clocks"), std::string_view::npos)
      << a.guarantee();
  // a hangs (or crashed): nothing renews. Its lease and record expire at
  // +30 s; others count them live until +32 s.
  clock->advance(32s - 1ms);
  auto early = guard("b", Mode::exclusive).claim();
  ASSERT_FALSE(early.has_value());
  EXPECT_EQ(early.error().error.code, Errc::another_instance);
  ASSERT_TRUE(early.error().holder->record.has_value());
  EXPECT_EQ(early.error().holder->record->id, "a");
  EXPECT_NE(early.error().error.message.find("counts as live until"), std::string::npos)
      << early.error().error.message;
  clock->advance(2ms);
  auto b = guard("b", Mode::exclusive).claim();
  ASSERT_TRUE(b.has_value()) << b.error().error.message;
  EXPECT_EQ(b->epoch(), std::optional<std::uint64_t>(2));
  EXPECT_TRUE(logger->contains("ended the store's lock of a holder that stopped renewing"));
  scheduler->run_due();  // a's overdue renewal: its lock is gone
  EXPECT_EQ(lost, 1);
  EXPECT_TRUE(b->active());
}

TEST_F(StaleLockTest, AHolderThatRenewsIsNeverEndedHoweverLongItHolds) {
  auto a = guard("a", Mode::exclusive).claim().value();
  for (int i = 1; i <= 30; ++i) {
    scheduler->advance(10s);  // every renewal lands
    ASSERT_TRUE(a.active()) << "after " << i * 10 << " s";
    auto b = guard("b", Mode::exclusive).claim();
    ASSERT_FALSE(b.has_value()) << "b ended a renewing holder's lock after " << i * 10 << " s";
  }
  EXPECT_FALSE(logger->contains("ended the store's lock"));
}

TEST_F(StaleLockTest, ALeaseAndRecordExpireOnTheTtlEvenWhenTheStoreGrantsLonger) {
  auto granting = std::make_shared<GrantingStore>(store, 1800s);  // sabre/dav's stock grant
  const WallTime now = clock->wall();
  auto a = guard("a", Mode::exclusive, granting).claim().value();
  EXPECT_EQ(a.record().expires_at, now + 30s) << "a fences at the ttl, so others may then";
  const auto lease = memory->get(Key::parse("instances.lease").value());
  ASSERT_TRUE(lease.has_value());
  EXPECT_NE(lease->data.find(R"("lock_expires_at":")" + format_rfc3339(now + 1800s)),
            std::string::npos)
      << lease->data;
  clock->advance(33s);
  auto b = guard("b", Mode::exclusive, granting).claim();
  ASSERT_TRUE(b.has_value()) << b.error().error.message;
  EXPECT_FALSE(logger->contains("past the timeout it granted")) << "within its grant";
}

TEST_F(StaleLockTest, ALockKeptPastItsGrantIsReportedAndSaidInTheGuarantee) {
  auto a = guard("a", Mode::exclusive).claim().value();  // granted as asked: 30 s
  clock->advance(40s);
  auto b = guard("b", Mode::exclusive).claim();
  ASSERT_TRUE(b.has_value()) << b.error().error.message;
  EXPECT_TRUE(logger->contains("the store keeps locks past the timeout it granted"));
  EXPECT_NE(b->guarantee().find("keeps locks past the timeout it grants"), std::string_view::npos)
      << b->guarantee();
  ASSERT_TRUE(b->stand_down());
  // The finding travels in the lease document to the next holder.
  auto c = guard("c", Mode::exclusive).claim().value();
  EXPECT_NE(c.guarantee().find("keeps locks past the timeout it grants"), std::string_view::npos);
}

TEST_F(StaleLockTest, AHolderThatCrashedBeforeItsLeaseDocumentIsJudgedByItsLockOwner) {
  lock_as_guard("crashed", clock->wall(), 30s);
  clock->advance(31s);
  auto early = guard("b", Mode::exclusive).claim();
  ASSERT_FALSE(early.has_value()) << "its lock is live until locked_at + ttl + max-skew";
  EXPECT_EQ(early.error().holder->record->id, "crashed");
  clock->advance(2s);
  auto b = guard("b", Mode::exclusive).claim();
  ASSERT_TRUE(b.has_value()) << b.error().error.message;
  EXPECT_EQ(b->epoch(), std::optional<std::uint64_t>(1));
}

TEST_F(StaleLockTest, ALockThatNoGuardTookIsNeverEndedAndTheRefusalSaysWhatToDo) {
  ASSERT_TRUE(memory->lock(lock, 1s, "another program"));
  clock->advance(24h);
  auto b = guard("b", Mode::exclusive).claim();
  ASSERT_FALSE(b.has_value());
  EXPECT_EQ(b.error().error.code, Errc::another_instance);
  EXPECT_NE(b.error().error.message.find("not an instance-guard lock owner"), std::string::npos)
      << b.error().error.message;
  EXPECT_NE(b.error().error.message.find("restart the server"), std::string::npos);
  EXPECT_TRUE(memory->lock_holder(lock).has_value()) << "still held";
}

TEST_F(StaleLockTest, AHoldersLaterRecordKeepsItsLockLive) {
  auto a = guard("a", Mode::exclusive).claim().value();
  // The lease document says +30 s, but a's record (renewed by other means:
  // an operator, a guard of another version) says +60 s: the later counts.
  Record r = a.record();
  r.expires_at = clock->wall() + 60s;
  put_record(r);
  clock->advance(40s);
  EXPECT_FALSE(guard("b", Mode::exclusive).claim().has_value());
  clock->advance(23s);
  EXPECT_TRUE(guard("b", Mode::exclusive).claim().has_value());
}

TEST_F(StaleLockTest, AnUnreadableHolderRecordKeepsItsLock) {
  auto a = guard("a", Mode::exclusive).claim().value();
  ASSERT_TRUE(memory->replace(record_key("a").value(), "{not json"));
  clock->advance(1h);
  auto b = guard("b", Mode::exclusive).claim();
  ASSERT_FALSE(b.has_value());
  EXPECT_EQ(b.error().error.code, Errc::another_instance);
  EXPECT_TRUE(memory->lock_holder(lock).has_value());
}

TEST_F(StaleLockTest, AStoodDownHolderWhoseUnlockFailedIsEndedAtOnce) {
  // a stands down: record removed, lease marked released, but the unlock
  // never reaches the store.
  struct NoUnlock final : StoreWrapper {
    using StoreWrapper::StoreWrapper;
    Result<void> unlock(const Key& k, std::string_view) override {
      return fail(Errc::unavailable, "unlock of " + k.str() + ": no reply");
    }
  };
  auto broken = std::make_shared<NoUnlock>(store);
  auto a = guard("a", Mode::exclusive, broken).claim().value();
  (void)a.stand_down();
  ASSERT_TRUE(memory->lock_holder(lock).has_value());
  auto b = guard("b", Mode::exclusive).claim();
  ASSERT_TRUE(b.has_value()) << b.error().error.message;
  EXPECT_TRUE(logger->contains("it stood down"));
}

TEST_F(StaleLockTest, TwoSuccessorsEndAStaleLockAtMostOnceBetweenThem) {
  auto a = guard("a", Mode::exclusive).claim().value();
  clock->advance(33s);
  // c's whole claim runs between b's judgement and b's unlock: b's unlock of
  // a's token then finds it gone, and b meets c's live lock.
  auto racing = std::make_shared<RacingUnlock>(store);
  std::optional<Claim> c;
  racing->before_unlock = [&] {
    auto claimed = guard("c", Mode::exclusive).claim();
    ASSERT_TRUE(claimed.has_value()) << claimed.error().error.message;
    c.emplace(std::move(*claimed));
  };
  auto b = guard("b", Mode::exclusive, racing).claim();
  ASSERT_TRUE(c.has_value());
  EXPECT_FALSE(b.has_value()) << "b and c would both hold";
  ASSERT_FALSE(b.has_value());
  EXPECT_EQ(b.error().holder->record->id, "c");
  EXPECT_TRUE(c->active());
}

TEST_F(StaleLockTest, AFailedLeaseDocumentWriteIsAFailedRenewalSoTheHolderFencesInTime) {
  int lost = 0;
  auto opts = options("a", Mode::exclusive);
  opts.on_lost = [&](const Error&) { ++lost; };
  const MonoTime since = clock->monotonic();
  auto a = Guard::create(store, opts).value().claim().value();
  const Key lease = Key::parse("instances.lease").value();
  store->fail_on(Op::replace, Errc::unavailable, [&](const Key& k) { return k == lease; });
  store->fail_on(Op::replace_if, Errc::unavailable, [&](const Key& k) { return k == lease; });
  scheduler->advance(10s);  // the lock refreshes, the document does not
  EXPECT_TRUE(logger->contains("renewal failed"));
  EXPECT_EQ(a.fence_deadline(), since + 28s) << "the deadline did not move";
  scheduler->advance(18s);
  EXPECT_EQ(lost, 1) << "fenced before a successor may end its lock (+32 s)";
}

// A store that lists a lock without its token, as sabre/dav does.
class HiddenTokens final : public StoreWrapper {
 public:
  using StoreWrapper::StoreWrapper;
  Result<LockHolder> lock_holder(const Key& key) override {
    auto holder = StoreWrapper::lock_holder(key);
    if (holder) holder->token.clear();
    return holder;
  }
};

TEST_F(StaleLockTest, WhereTheStoreHidesTokensTheLeaseDocumentsTokenEndsTheLock) {
  auto hidden = std::make_shared<HiddenTokens>(store);
  auto a = guard("a", Mode::exclusive, hidden).claim().value();
  clock->advance(33s);
  auto b = guard("b", Mode::exclusive, hidden).claim();
  ASSERT_TRUE(b.has_value()) << b.error().error.message;
  EXPECT_EQ(b->epoch(), std::optional<std::uint64_t>(2));
}

TEST_F(StaleLockTest, WhereTheStoreHidesTokensALockNoLeaseNamesStaysAndTheRefusalSaysWhy) {
  auto hidden = std::make_shared<HiddenTokens>(store);
  lock_as_guard("crashed", clock->wall(), 30s);
  clock->advance(1h);
  auto b = guard("b", Mode::exclusive, hidden).claim();
  ASSERT_FALSE(b.has_value());
  EXPECT_NE(b.error().error.message.find("does not say the lock's token"), std::string::npos)
      << b.error().error.message;
  EXPECT_TRUE(memory->lock_holder(lock).has_value());
}

TEST_F(StaleLockTest, ADeadProcessOnThisHostLosesItsLockAtOnce) {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);  // now a pid with no process
  auto opts = options("a", Mode::exclusive);
  opts.host = "host-b";  // b's host, boot and pid namespace
  opts.pid = child;
  auto a = Guard::create(store, opts).value().claim().value();
  auto b = guard("b", Mode::exclusive).claim();
  ASSERT_TRUE(b.has_value()) << b.error().error.message;
  EXPECT_TRUE(logger->contains("its process on this host is gone"));
}

}  // namespace
}  // namespace instance

namespace instance {
namespace {

// A store whose conditional replace can be made to hang until released.
class StallingStore final : public StoreWrapper {
 public:
  using StoreWrapper::StoreWrapper;
  void stall() { stalled_ = true; }
  void wait_until_stuck() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return stuck_; });
  }
  void release() {
    std::lock_guard lock(mu_);
    stalled_ = false;
    cv_.notify_all();
  }
  Result<std::string> replace_if(const Key& k, std::string_view d, std::string_view v) override {
    std::unique_lock lock(mu_);
    if (stalled_) {
      stuck_ = true;
      cv_.notify_all();
      cv_.wait(lock, [&] { return !stalled_; });
      return fail(Errc::timeout, "stalled request gave up");
    }
    lock.unlock();
    return StoreWrapper::replace_if(k, d, v);
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool stalled_ = false;
  bool stuck_ = false;
};

TEST_F(ModesTest, TheFenceFiresWhileARenewalIsStuckInTheStore) {
  auto stalling = std::make_shared<StallingStore>(memory);
  std::atomic<int> lost{0};
  auto opts = options("a", Mode::exclusive);
  opts.on_lost = [&](const Error&) { ++lost; };
  auto a = Guard::create(stalling, opts).value().claim().value();
  stalling->stall();
  clock->advance(10s);
  std::thread renewer([&] { scheduler->run_due(); });  // the renewal hangs in the store
  stalling->wait_until_stuck();
  clock->advance(18s);   // 28 s: ttl - max_skew since the claim
  scheduler->run_due();  // the fence check runs beside the stuck renewal
  EXPECT_EQ(lost.load(), 1);
  EXPECT_EQ(a.status(), ClaimStatus::lost);  // answers at once, no wait on the store
  EXPECT_FALSE(a.fence_deadline().has_value());
  EXPECT_TRUE(exists("instances/a")) << "the stuck renewal still owns the store calls";
  stalling->release();
  renewer.join();
  EXPECT_FALSE(exists("instances/a")) << "withdrawn once the renewal returned";
  EXPECT_EQ(lost.load(), 1);
  EXPECT_TRUE(a.stand_down());
}

}  // namespace
}  // namespace instance

namespace instance {
namespace {

// Writes show up in listings and reads only `lag` after they were acknowledged.
class LaggyStore final : public StoreWrapper {
 public:
  LaggyStore(std::shared_ptr<Store> target, std::shared_ptr<FakeClock> clock, Duration lag)
      : StoreWrapper(std::move(target)), clock_(std::move(clock)), lag_(lag) {}
  Result<std::string> replace(const Key& k, std::string_view d) override {
    written_[k.str()] = clock_->monotonic();
    return StoreWrapper::replace(k, d);
  }
  Result<Document> get(const Key& k) override {
    if (hidden(k)) return fail(Errc::not_found, "not visible yet");
    return StoreWrapper::get(k);
  }
  Result<std::vector<Key>> list(const Key& prefix) override {
    auto keys = StoreWrapper::list(prefix);
    if (keys) std::erase_if(*keys, [&](const Key& k) { return hidden(k); });
    return keys;
  }
  int probes() const {
    return static_cast<int>(std::ranges::count_if(
        written_, [](const auto& w) { return w.first.starts_with("instances.probe/"); }));
  }

 private:
  bool hidden(const Key& k) {
    const auto it = written_.find(k.str());
    return it != written_.end() && clock_->monotonic() < it->second + lag_;
  }
  std::shared_ptr<FakeClock> clock_;
  Duration lag_;
  std::map<std::string, MonoTime> written_;
};

TEST_F(ModesTest, VerifyRefusesAStoreThatShowsWritesLaterThanTheSettleTime) {
  auto laggy = std::make_shared<LaggyStore>(std::make_shared<PlainStore>(memory), clock, 100ms);
  auto c = guard("a", Mode::verify, laggy).claim();
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.error().error.code, Errc::invalid);
  EXPECT_NE(c.error().error.message.find("raise --settle"), std::string::npos)
      << c.error().error.message;
  EXPECT_FALSE(exists("instances/a"));
  EXPECT_FALSE(exists("instances.probe/a")) << "the probe is cleaned up";
}

TEST_F(ModesTest, VerifyAcceptsALagWithinTheSettleTimeAndChecksOnce) {
  auto laggy = std::make_shared<LaggyStore>(std::make_shared<PlainStore>(memory), clock, 100ms);
  auto opts = options("a", Mode::verify);
  opts.settle = 200ms;
  auto g = Guard::create(laggy, opts).value();
  auto c = g.claim();
  ASSERT_TRUE(c.has_value()) << c.error().error.message;
  ASSERT_TRUE(c->stand_down());
  ASSERT_TRUE(g.claim().has_value());
  EXPECT_EQ(laggy->probes(), 1);
}

TEST_F(ModesTest, TheLagSelfTestCanBeTurnedOff) {
  auto laggy = std::make_shared<LaggyStore>(std::make_shared<PlainStore>(memory), clock, 100ms);
  auto opts = options("a", Mode::verify);
  opts.check_lag = false;
  EXPECT_TRUE(Guard::create(laggy, opts).value().claim().has_value());
  EXPECT_EQ(laggy->probes(), 0);
}

}  // namespace
}  // namespace instance

namespace instance {
namespace {

TEST_F(ModesTest, OnAPlainStoreVerifySkipsDeadRecordsButNeverDeletesThemBlind) {
  auto plain = std::make_shared<PlainStore>(memory);
  put_record({.id = "old",
              .started_at = clock->wall(),
              .expires_at = clock->wall() + 10s,
              .host = "elsewhere"});
  clock->advance(1h);
  auto a = guard("a", Mode::verify, plain).claim();
  ASSERT_TRUE(a.has_value()) << "a dead record does not block";
  EXPECT_TRUE(exists("instances/old"))
      << "a blind delete could remove the record of its owner restarted meanwhile";
}

// Stale records are removed off the claim's path: after the grant, by a
// delete conditional on the version the claim judged.
TEST_F(ModesTest, ARefusedClaimRemovesNoStaleRecord) {
  // verify lists "instances/0-old" before the holder's "instances/a": the
  // scan judges it stale, then is refused by the live holder.
  auto holder = guard("a", Mode::verify).claim().value();
  scheduler->run_due();
  put_record({.id = "0-old",
              .started_at = clock->wall(),
              .expires_at = clock->wall() - 1h,
              .host = "elsewhere"});
  const int reads = store->calls(Op::get);
  auto b = guard("b", Mode::verify).claim();
  ASSERT_FALSE(b.has_value());
  EXPECT_GE(store->calls(Op::get) - reads, 2);  // it read both records
  scheduler->run_due();
  EXPECT_TRUE(exists("instances/0-old"));
  EXPECT_EQ(store->calls(Op::remove_if), 0);
}

TEST_F(ModesTest, AStaleRecordRewrittenBeforeTheUpkeepStays) {
  put_record({.id = "old",
              .started_at = clock->wall(),
              .expires_at = clock->wall() - 1h,
              .host = "elsewhere"});
  auto a = guard("a", Mode::exclusive).claim();
  ASSERT_TRUE(a.has_value()) << a.error().error.message;
  // Its owner comes back under the same id before the upkeep runs.
  put_record({.id = "old",
              .started_at = clock->wall(),
              .expires_at = clock->wall() + 1h,
              .host = "elsewhere"});
  scheduler->run_due();
  EXPECT_TRUE(exists("instances/old"));
  EXPECT_EQ(store->calls(Op::remove_if), 1);  // tried, on the version judged, and refused
}

// announce's blind delete (a store without conditional deletes) leaves the
// claim's path too, and reads the record again right before it.
class PlainAnnounceTest : public ModesTest {
 protected:
  // An announce claim on a plain store beside one record that expired an
  // hour ago; the upkeep after it has not run yet.
  void claim_beside_a_stale_record() {
    put_record({.id = "old",
                .started_at = clock->wall(),
                .expires_at = clock->wall() - 1h,
                .host = "elsewhere"});
    auto a = guard("a", Mode::announce, std::make_shared<PlainStore>(store)).claim();
    ASSERT_TRUE(a.has_value()) << a.error().error.message;
    held.emplace(std::move(*a));
    EXPECT_TRUE(exists("instances/old")) << "not deleted on the claim's path";
    EXPECT_EQ(store->calls(Op::remove), 0);
  }
  std::optional<Claim> held;
};

TEST_F(PlainAnnounceTest, TheUpkeepReadsAStaleRecordAgainAndDeletesItUnchanged) {
  ASSERT_NO_FATAL_FAILURE(claim_beside_a_stale_record());
  const int reads = store->calls(Op::get);
  scheduler->run_due();
  EXPECT_FALSE(exists("instances/old"));
  EXPECT_EQ(store->calls(Op::get) - reads, 1);
  EXPECT_EQ(store->calls(Op::remove), 1);
}

TEST_F(PlainAnnounceTest, AStaleRecordRewrittenBeforeTheUpkeepStays) {
  ASSERT_NO_FATAL_FAILURE(claim_beside_a_stale_record());
  // Its owner comes back under the same id before the upkeep runs.
  put_record({.id = "old",
              .started_at = clock->wall(),
              .expires_at = clock->wall() + 1h,
              .host = "elsewhere"});
  scheduler->run_due();
  EXPECT_TRUE(exists("instances/old")) << "a blind delete now would remove a live record";
  EXPECT_EQ(store->calls(Op::remove), 0);
}

TEST_F(PlainAnnounceTest, AStaleRecordThatNoLongerDecodesStays) {
  ASSERT_NO_FATAL_FAILURE(claim_beside_a_stale_record());
  ASSERT_TRUE(memory->replace(Key::parse("instances/old").value(), "{not json"));
  scheduler->run_due();
  EXPECT_TRUE(exists("instances/old")) << "a record it could not read is never deleted";
  EXPECT_EQ(store->calls(Op::remove), 0);
}

TEST_F(ModesTest, AStandDownBeforeTheUpkeepRemovesTheStaleRecordsAfterTheRelease) {
  put_record({.id = "old",
              .started_at = clock->wall(),
              .expires_at = clock->wall() - 1h,
              .host = "elsewhere"});
  auto a = guard("a", Mode::exclusive).claim().value();
  ASSERT_TRUE(a.stand_down());
  EXPECT_FALSE(exists("instances/old"));
  EXPECT_FALSE(exists("instances/a"));
  EXPECT_EQ(scheduler->pending(), 0u);  // nothing left behind on the scheduler
}

TEST_F(ModesTest, WithConditionalDeletesVerifyRemovesDeadRecords) {
  put_record({.id = "old",
              .started_at = clock->wall(),
              .expires_at = clock->wall() + 10s,
              .host = "elsewhere"});
  clock->advance(13s);
  auto a = guard("a", Mode::verify).claim();
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(store->calls(Op::remove_if), 0);  // the claim only judged it
  scheduler->run_due();                       // the upkeep after the claim removes it
  EXPECT_FALSE(exists("instances/old"));
  EXPECT_EQ(store->calls(Op::remove_if), 1);  // once, though verify's two scans both saw it
}

}  // namespace
}  // namespace instance

namespace instance {
namespace {

// ---- a live record keeps others out after a lock was taken ------------------

// On a memory store with a lease clock, as NativeLeaseTest.
class LockedScanTest : public LeaseTest {
 protected:
  // Whether the store's lock is free: taken and given back at once.
  bool lock_free() {
    const Key key = Key::parse("instances.lock").value();
    auto token = memory->lock(key, 1s, "probe");
    if (!token) return false;
    (void)memory->unlock(key, token->token);
    return true;
  }
};

TEST_P(LockedScanTest, TheLastHoldersLiveRecordBlocksUntilItsOwnExpiry) {
  auto a = guard("a", Mode::exclusive).claim().value();
  clock->advance(30s);  // a's lock lapsed on the store; a's renewals never ran
  // ... but a still runs: its record says so for 10 s more.
  Record rec = a.record();
  rec.expires_at = clock->wall() + 10s;
  put_record(rec);
  auto b = guard("b", Mode::exclusive).claim();
  ASSERT_FALSE(b.has_value());
  EXPECT_EQ(b.error().error.code, Errc::another_instance);
  ASSERT_TRUE(b.error().holder && b.error().holder->record);
  EXPECT_EQ(b.error().holder->record->id, "a");
  EXPECT_TRUE(lock_free()) << "the refused claim must give the lock back";
  clock->advance(10s);  // a's record expired: no skew margin for the last holder
  auto b2 = guard("b", Mode::exclusive).claim();
  ASSERT_TRUE(b2.has_value()) << b2.error().error.message;
}

TEST_P(LockedScanTest, AnotherLiveRecordBlocksForTheSkewMarginToo) {
  put_record({.id = "go-1",
              .started_at = clock->wall(),
              .expires_at = clock->wall() + 5s,
              .host = "elsewhere"});
  clock->advance(6s);  // expired 1 s ago: still live within the 2 s margin
  auto b = guard("b", Mode::exclusive).claim();
  ASSERT_FALSE(b.has_value());
  EXPECT_EQ(b.error().holder->record->id, "go-1");
  EXPECT_TRUE(lock_free());
  EXPECT_FALSE(exists("instances/b")) << "a refused claim leaves no record of its own";
  clock->advance(1s);
  auto b2 = guard("b", Mode::exclusive).claim();
  ASSERT_TRUE(b2.has_value()) << b2.error().error.message;
  // Where the refused claim wrote the lease document, its epoch stays spent.
  EXPECT_EQ(b2->epoch(), std::optional<std::uint64_t>(GetParam() ? 2 : 1));
}

TEST_P(LeaseTest, AnUnreadableLeaseDocumentIsNeverOverwrittenAndTheLockIsGivenBack) {
  refused_beside_a_garbage_lease();
  auto again = memory->lock(Key::parse("instances.lock").value(), 1s, "probe");
  EXPECT_TRUE(again.has_value()) << "the refused claim must give the lock back";
}

TEST_P(LeaseTest, ALeaseDocumentWhoseEpochReadsIsTakenOverWithTheNextEpoch) {
  // Not one of ours (no holder, no expiry), but its epoch reads: under the
  // lock that is all the document must carry on.
  ASSERT_TRUE(memory->replace(Key::parse("instances.lease").value(), R"({"epoch":7})"));
  auto b = guard("b", Mode::exclusive).claim();
  ASSERT_TRUE(b.has_value()) << b.error().error.message;
  EXPECT_EQ(b->epoch(), std::optional<std::uint64_t>(8));
  EXPECT_TRUE(logger->contains("its epoch is carried on"));
}

TEST_P(LeaseTest, ClaimRenewalAndStandDownCostOneRequestEachWhereTheStoreCan) {
  auto counting = make_counting_store(store);
  auto opts = options("a", Mode::exclusive);
  opts.history = false;
  auto g = Guard::create(counting, opts).value();
  auto a = g.claim().value();
  scheduler->run_due();  // the upkeep after the grant, if any
  const RequestCounts claimed = counting->counts();
  scheduler->advance(10s);  // one renewal (every ttl/3)
  const RequestCounts renewed = counting->counts() - claimed;
  ASSERT_TRUE(a.stand_down());
  const RequestCounts ended = counting->counts() - claimed - renewed;
  if (GetParam()) {
    EXPECT_EQ(claimed.str(), "claim_lease=1");
    EXPECT_EQ(renewed.str(), "renew_lease=1");
    EXPECT_EQ(ended.str(), "end_lease=1");
  } else {
    EXPECT_EQ(claimed.str(), "get=1 replace=2 list=1 lock=1");
    EXPECT_EQ(renewed.str(), "replace=1 replace_if=1 refresh_lock=1");
    EXPECT_EQ(ended.str(), "remove=1 replace_if=1 unlock=1");
  }
  EXPECT_EQ(a.epoch(), std::optional<std::uint64_t>(1));
  auto b = guard("b", Mode::exclusive).claim();
  ASSERT_TRUE(b.has_value()) << b.error().error.message;
  EXPECT_EQ(b->epoch(), std::optional<std::uint64_t>(2));
}

INSTANTIATE_TEST_SUITE_P(Lease, LockedScanTest, ::testing::Bool(),
                         [](const auto& param) { return param.param ? "atomic" : "steps"; });

}  // namespace
}  // namespace instance
