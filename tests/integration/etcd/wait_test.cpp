// --wait's hand-over on etcd (Store::await_change): a waiter reads the lock
// key (or the document) and watches it from the next revision, so it is
// woken by the unlock, the removal or the lease's expiry, not at its next
// poll. Each wait that should be woken is given a minute: one that was not
// woken would come back false only after it.
#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <stop_token>
#include <thread>

#include "server.hpp"
#include "support/server_script.hpp"
#include "support/test_support.hpp"

namespace instance::testing {
namespace {

using namespace std::chrono_literals;

template <typename F>
std::chrono::steady_clock::duration timed(F&& f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::steady_clock::now() - start;
}

class EtcdWait : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const auto missing = etcd_missing(); !missing.empty()) GTEST_SKIP() << missing;
    ASSERT_TRUE(EtcdServer::shared().running());
    prefix_ = EtcdServer::fresh_prefix();
    waiter_ = EtcdServer::shared().store(prefix_);
    holder_ = EtcdServer::shared().store(prefix_);
  }

  // Runs `change` while another thread waits on `k` for a minute; the
  // wait's answer and how long it took.
  template <typename F>
  std::pair<Result<bool>, std::chrono::steady_clock::duration> wait_across(const Key& k,
                                                                           F&& change) {
    std::optional<Result<bool>> woken;
    std::chrono::steady_clock::duration took{};
    std::thread t([&] { took = timed([&] { woken = waiter_->await_change(k, 1min, {}); }); });
    // Only so the wait is usually already watching: a change before the
    // watch is found by its read, or reported from the revision read.
    std::this_thread::sleep_for(100ms);
    change();
    t.join();
    return {std::move(*woken), took};
  }

  std::string prefix_;
  std::shared_ptr<Store> waiter_;
  std::shared_ptr<Store> holder_;
};

TEST_F(EtcdWait, AWaiterIsWokenByAnUnlockInAnotherStore) {
  const Key k = key("instances.lock");
  auto held = holder_->lock(k, 1min, "holder").value();
  auto [woken, took] = wait_across(k, [&] { ASSERT_TRUE(holder_->unlock(k, held.token)); });
  ASSERT_TRUE(woken) << woken.error().message;
  EXPECT_TRUE(*woken);
  EXPECT_LT(took, 10s);
  EXPECT_TRUE(waiter_->lock(k, 1min, "next"));  // and the lock is free to take
}

TEST_F(EtcdWait, AWaiterIsWokenWhenTheHoldersLeaseExpires) {
  const Key k = key("instances.lock");
  ASSERT_TRUE(holder_->lock(k, 2s, "holder"));  // never refreshed: etcd deletes its key
  Result<bool> woken = false;
  const auto took = timed([&] { woken = waiter_->await_change(k, 1min, {}); });
  ASSERT_TRUE(woken) << woken.error().message;
  EXPECT_TRUE(*woken);
  EXPECT_LT(took, 20s);
}

TEST_F(EtcdWait, AWaitForAFreeLockOrAMissingDocumentReturnsAtOnce) {
  Result<bool> free = false;
  auto took = timed([&] { free = waiter_->await_change(key("instances.lock"), 1min, {}); });
  ASSERT_TRUE(free) << free.error().message;
  EXPECT_TRUE(*free);
  EXPECT_LT(took, 10s);
  took = timed([&] { free = waiter_->await_change(key("instances/gone"), 1min, {}); });
  ASSERT_TRUE(free) << free.error().message;
  EXPECT_TRUE(*free);
  EXPECT_LT(took, 10s);
}

TEST_F(EtcdWait, AWaitOnAHeldLockTimesOutWithFalseAndIgnoresOtherKeys) {
  const Key k = key("instances.lock");
  ASSERT_TRUE(holder_->lock(k, 1min, "holder"));
  ASSERT_TRUE(holder_->replace(key("instances/other"), "{}"));
  auto still = waiter_->await_change(k, 100ms, {});
  ASSERT_TRUE(still) << still.error().message;
  EXPECT_FALSE(*still);
  // Another key's change wakes nobody here; the wait spans several slices.
  std::optional<Result<bool>> later;
  std::chrono::steady_clock::duration took{};
  std::thread t([&] { took = timed([&] { later = waiter_->await_change(k, 700ms, {}); }); });
  std::this_thread::sleep_for(100ms);
  ASSERT_TRUE(holder_->replace(key("instances/other"), "{\"again\":1}"));
  ASSERT_TRUE(holder_->remove(key("instances/other")));
  t.join();
  ASSERT_TRUE(later.has_value() && later->has_value()) << later->error().message;
  EXPECT_FALSE(**later);
  EXPECT_GE(took, 650ms) << "it waited out its timeout";
}

TEST_F(EtcdWait, AWaitEndsWithFalseSoonAfterStopIsRequested) {
  const Key k = key("instances.lock");
  ASSERT_TRUE(holder_->lock(k, 1min, "holder"));
  std::stop_source stop;
  std::optional<Result<bool>> woken;
  std::chrono::steady_clock::time_point ended;
  std::thread t([&] {
    woken = waiter_->await_change(k, 1min, stop.get_token());
    ended = std::chrono::steady_clock::now();
  });
  std::this_thread::sleep_for(300ms);
  const auto asked = std::chrono::steady_clock::now();
  stop.request_stop();
  t.join();
  ASSERT_TRUE(woken.has_value() && woken->has_value()) << woken->error().message;
  EXPECT_FALSE(**woken);  // not a change: the holder still holds
  // Within one watch slice (200 ms), with room for a loaded machine.
  EXPECT_LT(ended - asked, 3s);
  EXPECT_EQ(waiter_->lock(k, 1min, "next").error().code, Errc::locked);
}

TEST_F(EtcdWait, ARemovedOrRewrittenRecordWakesItsWaiter) {
  const Key record = key("instances/a");
  ASSERT_TRUE(holder_->replace(record, "{}"));
  auto still = waiter_->await_change(record, 100ms, {});
  ASSERT_TRUE(still) << still.error().message;
  EXPECT_FALSE(*still);  // present and unchanged: nothing to wake for
  auto [rewritten, took_write] =
      wait_across(record, [&] { ASSERT_TRUE(holder_->replace(record, "{\"renewed\":1}")); });
  ASSERT_TRUE(rewritten) << rewritten.error().message;
  EXPECT_TRUE(*rewritten);
  EXPECT_LT(took_write, 10s);
  auto [removed, took] = wait_across(record, [&] { ASSERT_TRUE(holder_->remove(record)); });
  ASSERT_TRUE(removed) << removed.error().message;
  EXPECT_TRUE(*removed);
  EXPECT_LT(took, 10s);
}

TEST_F(EtcdWait, TwoWaitsAtOnceOnOneStoreAreBothWoken) {
  const Key k = key("instances.lock");
  auto held = holder_->lock(k, 1min, "holder").value();
  std::optional<Result<bool>> first, second;
  std::thread a([&] { first = waiter_->await_change(k, 1min, {}); });
  std::thread b([&] { second = waiter_->await_change(k, 1min, {}); });
  std::this_thread::sleep_for(100ms);
  ASSERT_TRUE(holder_->unlock(k, held.token));
  a.join();
  b.join();
  for (auto* woken : {&first, &second}) {
    ASSERT_TRUE(woken->has_value() && (*woken)->has_value()) << (*woken)->error().message;
    EXPECT_TRUE(***woken);
  }
}

TEST(EtcdWaitAuth, AWaitLogsInAsTheStoreDoes) {
  if (const auto missing = etcd_missing(); !missing.empty()) GTEST_SKIP() << missing;
  auto& server = EtcdServer::with_auth();
  ASSERT_TRUE(server.running());
  const std::string prefix = EtcdServer::fresh_prefix();
  auto waiter = make_etcd_store(server.options(prefix)).value();
  auto holder = make_etcd_store(server.options(prefix)).value();
  const Key k = key("instances.lock");
  auto held = holder->lock(k, 1min, "holder");
  ASSERT_TRUE(held) << held.error().message;
  std::optional<Result<bool>> woken;
  std::thread t([&] { woken = waiter->await_change(k, 1min, {}); });
  std::this_thread::sleep_for(100ms);
  ASSERT_TRUE(holder->unlock(k, held->token));
  t.join();
  ASSERT_TRUE(woken.has_value() && woken->has_value()) << woken->error().message;
  EXPECT_TRUE(**woken);
}

TEST(EtcdWaitDown, ADownServerFailsTheWaitSoTheCallerPolls) {
  EtcdStoreOptions options;
  const int port = free_port();
  options.endpoints = {"http://127.0.0.1:" + std::to_string(port)};
  options.retry_deadline = 300ms;
  auto wait = make_etcd_store(options).value()->await_change(key("instances.lock"), 1min, {});
  ASSERT_FALSE(wait);
  EXPECT_EQ(wait.error().code, Errc::unavailable) << wait.error().message;
  EXPECT_NE(wait.error().message.find("wait for a change of instances.lock at etcd://127.0.0.1:" +
                                      std::to_string(port)),
            std::string::npos)
      << wait.error().message;
}

}  // namespace
}  // namespace instance::testing
