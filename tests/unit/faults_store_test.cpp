// The fault-injecting store wrapper: schedules, seeded probabilities, each
// kind of fault, and thread safety. Fake clock; nothing sleeps.
#include <thread>

#include <gtest/gtest.h>

#include "instance/record.hpp"
#include "instance/stores/faults.hpp"
#include "instance/stores/memory.hpp"
#include "instance/testing.hpp"
#include "support/test_support.hpp"

namespace instance {
namespace {

using namespace std::chrono_literals;

using testing::key;

class FaultStoreTest : public ::testing::Test {
 protected:
  std::shared_ptr<FakeClock> clock = std::make_shared<FakeClock>();
  std::shared_ptr<Store> memory = make_memory_store(clock);
  std::shared_ptr<FaultStore> store = make_fault_store(memory, {.seed = 42, .clock = clock});
};

TEST_F(FaultStoreTest, ForwardsEverythingWithoutRules) {
  ASSERT_TRUE(store->create(key("instances/a"), "1"));
  EXPECT_EQ(store->get(key("instances/a"))->data, "1");
  EXPECT_EQ(store->list(key("instances"))->size(), 1u);
  EXPECT_EQ(store->calls(StoreOp::get), 1u);
  EXPECT_TRUE(store->injections().empty());
  EXPECT_EQ(store->describe(), memory->describe());
  EXPECT_TRUE(store->capabilities().native_lease);
}

TEST_F(FaultStoreTest, TheThirdReplaceUnderInstancesFails) {
  const RuleId rule = store
                          ->add({.ops = {StoreOp::replace},
                                 .under = key("instances"),
                                 .first = 3,
                                 .times = 1,
                                 .fault = {.kind = FaultKind::fail, .code = Errc::permission}})
                          .value();
  ASSERT_TRUE(store->replace(key("other/x"), "x"));  // not under instances/: not counted
  ASSERT_TRUE(store->replace(key("instances/a"), "1"));
  ASSERT_TRUE(store->replace(key("instances/b"), "1"));
  auto third = store->replace(key("instances/c"), "1");
  ASSERT_FALSE(third);
  EXPECT_EQ(third.error().code, Errc::permission);
  EXPECT_NE(third.error().message.find("instances/c"), std::string::npos);
  EXPECT_FALSE(memory->get(key("instances/c")));         // a failure never reaches the store
  EXPECT_TRUE(store->replace(key("instances/c"), "1"));  // only once
  EXPECT_EQ(store->matched(rule), 4u);
  ASSERT_EQ(store->injections().size(), 1u);
  EXPECT_EQ(store->injections()[0].key, key("instances/c"));
  EXPECT_EQ(store->injections()[0].op, StoreOp::replace);
}

TEST_F(FaultStoreTest, TimesZeroMeansForeverAndHealStops) {
  ASSERT_TRUE(store->add({.ops = {StoreOp::get}, .fault = {.code = Errc::unavailable}}));
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(store->get(key("k")));
  store->heal();
  EXPECT_EQ(store->get(key("k")).error().code, Errc::not_found);
}

TEST_F(FaultStoreTest, RemoveRuleStopsOneRule) {
  const RuleId a =
      store->add({.ops = {StoreOp::get}, .fault = {.code = Errc::unavailable}}).value();
  const RuleId b = store->add({.ops = {StoreOp::list}, .fault = {.code = Errc::timeout}}).value();
  EXPECT_TRUE(store->remove_rule(a));
  EXPECT_FALSE(store->remove_rule(a));
  EXPECT_EQ(store->get(key("k")).error().code, Errc::not_found);
  EXPECT_EQ(store->list(key("k")).error().code, Errc::timeout);
  EXPECT_EQ(store->matched(b), 1u);
}

std::vector<std::uint64_t> injected_calls(std::uint64_t seed) {
  auto s = make_fault_store(make_memory_store(), {.seed = seed});
  (void)s->add({.probability = 0.3, .fault = {.code = Errc::unavailable}});
  for (int i = 0; i < 200; ++i) {
    (void)s->replace(key("instances/k" + std::to_string(i % 7)), "x");
    (void)s->get(key("instances/k" + std::to_string(i % 5)));
  }
  std::vector<std::uint64_t> out;
  for (const auto& inj : s->injections()) out.push_back(inj.call);
  return out;
}

TEST(FaultStoreSeed, ProbabilitiesAreReproducibleFromTheSeed) {
  const auto a = injected_calls(7);
  EXPECT_EQ(a, injected_calls(7));
  EXPECT_NE(a, injected_calls(8));
  // About 30% of 400 calls.
  EXPECT_GT(a.size(), 80u);
  EXPECT_LT(a.size(), 160u);
}

TEST_F(FaultStoreTest, TimeoutWaitsOnTheInjectedClockAndDoesNotTouchTheStore) {
  ASSERT_TRUE(
      store->add({.ops = {StoreOp::create}, .fault = {.kind = FaultKind::timeout, .delay = 7s}}));
  const MonoTime before = clock->monotonic();
  auto r = store->create(key("instances/a"), "1");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::timeout);
  EXPECT_EQ(clock->monotonic() - before, 7s);
  EXPECT_FALSE(memory->get(key("instances/a")));
}

TEST_F(FaultStoreTest, DelayMovesVirtualTimeThenForwards) {
  ASSERT_TRUE(
      store->add({.ops = {StoreOp::replace}, .fault = {.kind = FaultKind::delay, .delay = 250ms}}));
  const MonoTime before = clock->monotonic();
  ASSERT_TRUE(store->replace(key("instances/a"), "1"));
  EXPECT_EQ(clock->monotonic() - before, 250ms);
  EXPECT_EQ(memory->get(key("instances/a"))->data, "1");
}

TEST_F(FaultStoreTest, LostReplyAppliesTheWriteButReportsFailure) {
  ASSERT_TRUE(
      store->add({.ops = {StoreOp::replace, StoreOp::remove},
                  .fault = {.kind = FaultKind::lost_reply, .code = Errc::timeout, .delay = 1s}}));
  auto w = store->replace(key("instances/a"), "1");
  ASSERT_FALSE(w);
  EXPECT_EQ(w.error().code, Errc::timeout);
  EXPECT_EQ(memory->get(key("instances/a"))->data, "1");
  auto r = store->remove(key("instances/a"));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Errc::timeout);
  EXPECT_FALSE(memory->get(key("instances/a")));
}

TEST_F(FaultStoreTest, LostReplyOnLockOperations) {
  ASSERT_TRUE(
      store->add({.ops = {StoreOp::lock}, .times = 1, .fault = {.kind = FaultKind::lost_reply}}));
  auto token = store->lock(key("instances.lock"), 10s, "me");
  ASSERT_FALSE(token);
  EXPECT_EQ(token.error().code, Errc::unavailable);
  // The lock was taken anyway: a retry finds it held.
  EXPECT_EQ(store->lock(key("instances.lock"), 10s, "me").error().code, Errc::locked);
}

TEST_F(FaultStoreTest, EveryOperationCanFail) {
  ASSERT_TRUE(store->add({.fault = {.code = Errc::unavailable}}));
  const Key k = key("instances/a");
  EXPECT_FALSE(store->get(k));
  EXPECT_FALSE(store->create(k, "x"));
  EXPECT_FALSE(store->replace(k, "x"));
  EXPECT_FALSE(store->remove(k));
  EXPECT_FALSE(store->list(k));
  EXPECT_FALSE(store->replace_if(k, "x", "1"));
  EXPECT_FALSE(store->remove_if(k, "1"));
  EXPECT_FALSE(store->lock(k, 1s, "me"));
  EXPECT_FALSE(store->refresh_lock(k, "t", 1s));
  EXPECT_FALSE(store->unlock(k, "t"));
  EXPECT_FALSE(store->lock_holder(k));
  const Key keys[] = {k};
  EXPECT_FALSE(store->get_many(keys));
  EXPECT_FALSE(store->get_all(key("instances")));
  // The lease operations of a store that does each in one request fail as
  // one call each.
  auto atomic = make_fault_store(
      make_memory_store(MemoryStoreOptions{.lease_clock = clock, .atomic_lease = true}),
      {.seed = 42, .clock = clock});
  ASSERT_TRUE(atomic->add({.ops = {StoreOp::claim_lease, StoreOp::renew_lease, StoreOp::end_lease},
                           .fault = {.code = Errc::unavailable}}));
  EXPECT_FALSE(atomic->claim_lease({.lock = k, .ttl = 1s, .lease = key("l"), .record = key("r")}));
  EXPECT_FALSE(atomic->renew_lease({.lock = k, .token = "t", .ttl = 1s}));
  EXPECT_FALSE(atomic->end_lease({.lock = k, .token = "t"}));
  EXPECT_EQ(store->injections().size() + atomic->injections().size(),
            static_cast<std::size_t>(kStoreOpCount));
  for (const auto& inj : store->injections()) EXPECT_EQ(inj.kind, FaultKind::fail);
}

TEST_F(FaultStoreTest, LeaseOperationsOfAStoreThatCannotDoThemAtOnceMeetEachStepsFaults) {
  // The plain memory store has no atomic_lease: claim_lease is lock + get,
  // so a fault on get fails it, and a claim_lease rule never fires.
  ASSERT_TRUE(store->add({.ops = {StoreOp::claim_lease}, .fault = {.code = Errc::unavailable}}));
  ASSERT_TRUE(store->add({.ops = {StoreOp::get}, .times = 1, .fault = {.code = Errc::timeout}}));
  auto claimed = store->claim_lease(
      {.lock = key("instances.lock"), .ttl = 10s, .lease = key("instances.lease")});
  ASSERT_TRUE(claimed);  // the lock was taken; the lease read failed
  EXPECT_EQ(claimed->previous.error().code, Errc::timeout);
  EXPECT_EQ(store->calls(StoreOp::lock), 1u);
  EXPECT_EQ(store->calls(StoreOp::claim_lease), 0u);
}

TEST_F(FaultStoreTest, StaleGetReturnsThePreviousVersion) {
  const Key k = key("instances/a");
  ASSERT_TRUE(store->replace(k, "v1"));
  ASSERT_TRUE(store->replace(k, "v2"));
  ASSERT_TRUE(
      store->add({.ops = {StoreOp::get}, .times = 1, .fault = {.kind = FaultKind::stale_read}}));
  auto stale = store->get(k);
  ASSERT_TRUE(stale);
  EXPECT_EQ(stale->data, "v1");
  EXPECT_EQ(store->get(k)->data, "v2");  // only once
}

TEST_F(FaultStoreTest, StaleGetOfAFreshDocumentIsNotFound) {
  const Key k = key("instances/a");
  ASSERT_TRUE(store->create(k, "v1"));
  ASSERT_TRUE(store->add({.ops = {StoreOp::get}, .fault = {.kind = FaultKind::stale_read}}));
  EXPECT_EQ(store->get(k).error().code, Errc::not_found);
}

TEST_F(FaultStoreTest, StaleGetLearnsOfWritesMadeBehindItsBack) {
  const Key k = key("instances/a");
  ASSERT_TRUE(memory->replace(k, "v1"));
  EXPECT_EQ(store->get(k)->data, "v1");
  ASSERT_TRUE(memory->replace(k, "v2"));  // not through the wrapper
  ASSERT_TRUE(store->add({.ops = {StoreOp::get}, .fault = {.kind = FaultKind::stale_read}}));
  EXPECT_EQ(store->get(k)->data, "v1");
}

TEST_F(FaultStoreTest, StaleGetOfARemovedDocumentReturnsItsLastBytes) {
  const Key k = key("instances/a");
  ASSERT_TRUE(memory->replace(k, "v1"));  // existed before the wrapper saw it
  ASSERT_TRUE(store->remove(k));
  ASSERT_TRUE(store->add({.ops = {StoreOp::get}, .fault = {.kind = FaultKind::stale_read}}));
  EXPECT_EQ(store->get(k)->data, "v1");
}

TEST_F(FaultStoreTest, StaleListingUndoesTheLastChangeUnderThePrefix) {
  ASSERT_TRUE(store->replace(key("instances/a"), "1"));
  ASSERT_TRUE(store->replace(key("instances/b"), "1"));
  ASSERT_TRUE(store->replace(key("elsewhere/c"), "1"));  // not under the prefix
  ASSERT_TRUE(store->add({.ops = {StoreOp::list}, .fault = {.kind = FaultKind::stale_read}}));
  EXPECT_EQ(*store->list(key("instances")), std::vector<Key>{key("instances/a")});
  ASSERT_TRUE(store->remove(key("instances/a")));
  auto keys = *store->list(key("instances"));
  std::sort(keys.begin(), keys.end());
  EXPECT_EQ(keys, (std::vector<Key>{key("instances/a"), key("instances/b")}));
}

TEST_F(FaultStoreTest, CorruptionMakesARecordUndecodable) {
  const Record rec{.id = "a", .started_at = clock->wall(), .expires_at = clock->wall() + 10s};
  const Key k = key("instances/a");
  ASSERT_TRUE(store->replace(k, encode_record(rec)));
  ASSERT_TRUE(decode_record(store->get(k)->data));
  for (Corruption how : {Corruption::flip, Corruption::truncate}) {
    const RuleId id = store
                          ->add({.ops = {StoreOp::get},
                                 .times = 50,
                                 .fault = {.kind = FaultKind::corrupt, .corruption = how}})
                          .value();
    for (int i = 0; i < 50; ++i) {  // 50 seeded positions
      auto doc = store->get(k);
      ASSERT_TRUE(doc);
      EXPECT_NE(doc->data, encode_record(rec));
      EXPECT_FALSE(decode_record(doc->data)) << doc->data;
    }
    store->remove_rule(id);
  }
  EXPECT_EQ(memory->get(k)->data, encode_record(rec));  // the stored bytes are untouched
}

TEST_F(FaultStoreTest, RulesThatCannotApplyAreRefused) {
  auto bad = [&](FaultRule r) {
    auto added = store->add(std::move(r));
    return !added && added.error().code == Errc::invalid;
  };
  EXPECT_TRUE(bad({.ops = {StoreOp::replace}, .fault = {.kind = FaultKind::stale_read}}));
  EXPECT_TRUE(bad({.fault = {.kind = FaultKind::stale_read}}));  // every op
  EXPECT_TRUE(bad({.ops = {StoreOp::list}, .fault = {.kind = FaultKind::corrupt}}));
  EXPECT_TRUE(bad({.ops = {StoreOp::get}, .fault = {.kind = FaultKind::lost_reply}}));
  EXPECT_TRUE(bad({.ops = {StoreOp::replace},
                   .fault = {.kind = FaultKind::lost_reply, .code = Errc::conflict}}));
  EXPECT_TRUE(bad({.probability = 1.5}));
  EXPECT_TRUE(bad({.first = 0}));
  EXPECT_TRUE(bad({.fault = {.kind = FaultKind::delay, .delay = -1s}}));
}

TEST_F(FaultStoreTest, KeyFilterAndTheFirstRuleThatFiresDecides) {
  ASSERT_TRUE(store->add({.ops = {StoreOp::get},
                          .when = [](const Key& k) { return k.leaf() == "b"; },
                          .fault = {.code = Errc::permission}}));
  ASSERT_TRUE(store->add({.ops = {StoreOp::get}, .fault = {.code = Errc::timeout}}));
  EXPECT_EQ(store->get(key("instances/a")).error().code, Errc::timeout);
  EXPECT_EQ(store->get(key("instances/b")).error().code, Errc::permission);
}

TEST(FaultStoreThreads, ConcurrentCallsAreCountedAndInjectedConsistently) {
  auto memory = make_memory_store();
  auto store = make_fault_store(memory, {.seed = 1});
  const RuleId rule =
      store->add({.probability = 0.5, .fault = {.code = Errc::unavailable}}).value();
  constexpr int kThreads = 4, kCalls = 500;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kCalls; ++i) {
        const Key k = key("instances/t" + std::to_string(t));
        if (!store->replace(k, std::to_string(i))) ++failures;
        (void)store->get(k);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(store->calls(StoreOp::replace), static_cast<std::uint64_t>(kThreads * kCalls));
  EXPECT_EQ(store->matched(rule), static_cast<std::uint64_t>(2 * kThreads * kCalls));
  const auto injected = store->injections();
  const auto replaces = std::count_if(injected.begin(), injected.end(),
                                      [](const Injection& i) { return i.op == StoreOp::replace; });
  EXPECT_EQ(replaces, failures.load());
}

}  // namespace
}  // namespace instance
