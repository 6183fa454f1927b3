// The request-counting store wrapper: one count per call, per operation,
// whatever the call's outcome; calls are forwarded unchanged.
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "instance/stores/counting.hpp"
#include "instance/stores/memory.hpp"
#include "instance/testing.hpp"
#include "support/test_support.hpp"

namespace instance {
namespace {

using namespace std::chrono_literals;

using testing::key;

class CountingStoreTest : public ::testing::Test {
 protected:
  std::shared_ptr<FakeClock> clock = std::make_shared<FakeClock>();
  std::shared_ptr<Store> memory =
      make_memory_store(MemoryStoreOptions{.lease_clock = clock, .atomic_lease = true});
  std::shared_ptr<CountingStore> store = make_counting_store(memory);
};

LeaseClaim a_claim() {
  return LeaseClaim{
      .lock = key("instances.lock"),
      .ttl = 10s,
      .owner = "me",
      .lease = key("instances.lease"),
      .document = {.head = "{\"epoch\":", .middle = ",\"lock_token\":\"", .tail = "\"}"},
      .record = key("instances/me"),
      .record_data = "{}",
      .scan = key("instances")};
}

LeaseRenewal a_renewal(const std::string& token) {
  return LeaseRenewal{.lock = key("instances.lock"),
                      .token = token,
                      .ttl = 10s,
                      .lease = key("instances.lease"),
                      .lease_data = "{}",
                      .record = key("instances/me"),
                      .record_data = "{}"};
}

LeaseEnd an_end(const std::string& token) {
  return LeaseEnd{.lock = key("instances.lock"),
                  .token = token,
                  .lease = key("instances.lease"),
                  .lease_data = "{}",
                  .record = key("instances/me")};
}

TEST_F(CountingStoreTest, CountsEveryOperationOnceAndForwardsIt) {
  auto v1 = store->create(key("instances/a"), "1");
  ASSERT_TRUE(v1);
  auto v2 = store->replace_if(key("instances/a"), "2", *v1);
  ASSERT_TRUE(v2);
  EXPECT_EQ(memory->get(key("instances/a"))->data, "2");
  ASSERT_TRUE(store->replace(key("instances/b"), "3"));
  EXPECT_EQ(store->get(key("instances/b"))->data, "3");
  EXPECT_EQ(store->list(key("instances"))->size(), 2u);
  ASSERT_TRUE(store->remove_if(key("instances/a"), *v2));
  ASSERT_TRUE(store->remove(key("instances/b")));
  auto token = store->lock(key("locks/x"), 10s, "me");
  ASSERT_TRUE(token);
  ASSERT_TRUE(store->refresh_lock(key("locks/x"), token->token, 10s));
  auto holder = store->lock_holder(key("locks/x"));
  ASSERT_TRUE(holder);
  EXPECT_EQ(holder->token, token->token);
  EXPECT_EQ(holder->owner, "me");
  ASSERT_TRUE(store->unlock(key("locks/x"), token->token));
  const Key both[] = {key("instances/a"), key("instances/b")};
  ASSERT_TRUE(store->get_many(both));             // one call, whatever it reads
  ASSERT_TRUE(store->get_all(key("instances")));  // likewise
  // The lease operations of a store that does each in one request.
  auto claimed = store->claim_lease(a_claim());
  ASSERT_TRUE(claimed);
  EXPECT_TRUE(claimed->written);
  ASSERT_TRUE(store->renew_lease(a_renewal(claimed->grant.token)));
  auto ended = store->end_lease(an_end(claimed->grant.token));
  ASSERT_TRUE(ended);
  EXPECT_TRUE(*ended);

  const RequestCounts c = store->counts();
  for (int i = 0; i < kStoreOpCount; ++i) {
    EXPECT_EQ(c.by_op[static_cast<std::size_t>(i)], 1u) << to_string(static_cast<StoreOp>(i));
  }
  EXPECT_EQ(c.total(), 16u);
  EXPECT_EQ(c.writes(), 3u);
  EXPECT_EQ(c.removes(), 2u);
  EXPECT_EQ(c.lock_ops(), 3u);
}

TEST_F(CountingStoreTest, LeaseOperationsOfAStoreThatCannotDoThemAtOnceCountEachStep) {
  auto stepwise = make_counting_store(make_memory_store(clock));
  auto claimed = stepwise->claim_lease(a_claim());
  ASSERT_TRUE(claimed);
  EXPECT_FALSE(claimed->written);
  EXPECT_EQ(claimed->previous.error().code, Errc::not_found);
  EXPECT_EQ(stepwise->counts().str(), "get=1 lock=1");
  ASSERT_TRUE(stepwise->renew_lease(a_renewal(claimed->grant.token)));
  auto ended = stepwise->end_lease(an_end(claimed->grant.token));
  ASSERT_TRUE(ended);
  EXPECT_FALSE(*ended);  // nothing done: the caller goes step by step
  EXPECT_EQ(stepwise->counts().str(), "get=1 lock=1 refresh_lock=1");
}

TEST_F(CountingStoreTest, FailedCallsCountToo) {
  EXPECT_EQ(store->get(key("instances/none")).error().code, Errc::not_found);
  EXPECT_EQ(store->remove(key("instances/none")).error().code, Errc::not_found);
  EXPECT_EQ(store->counts()[StoreOp::get], 1u);
  EXPECT_EQ(store->counts()[StoreOp::remove], 1u);
}

TEST_F(CountingStoreTest, DescribeAndCapabilitiesAreNotCounted) {
  EXPECT_EQ(store->describe(), memory->describe());
  EXPECT_TRUE(store->capabilities().conditional_writes);
  EXPECT_EQ(store->counts().total(), 0u);
}

TEST_F(CountingStoreTest, DifferenceResetAndText) {
  ASSERT_TRUE(store->replace(key("instances/a"), "1"));
  const RequestCounts before = store->counts();
  ASSERT_TRUE(store->list(key("instances")));
  ASSERT_TRUE(store->get(key("instances/a")));
  ASSERT_TRUE(store->get(key("instances/a")));
  const RequestCounts delta = store->counts() - before;
  EXPECT_EQ(delta.str(), "get=2 list=1");
  EXPECT_EQ(delta.total(), 3u);
  store->reset();
  EXPECT_EQ(store->counts(), RequestCounts{});
  EXPECT_EQ(RequestCounts{}.str(), "none");
}

TEST_F(CountingStoreTest, ConcurrentCallsAreAllCounted) {
  std::vector<std::jthread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 500; ++i) (void)store->get(key("instances/x"));
    });
  }
  threads.clear();
  EXPECT_EQ(store->counts()[StoreOp::get], 2000u);
}

}  // namespace
}  // namespace instance
