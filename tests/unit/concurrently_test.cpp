// for_each_concurrently and get_concurrently (instance/sdk/concurrently.hpp):
// every index once, at most `width` at a time, the calling thread one of
// them, and in order on the calling thread alone when there is nothing to
// share.
#include "instance/sdk/concurrently.hpp"

#include <gtest/gtest.h>

#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "instance/stores/memory.hpp"
#include "support/overlap.hpp"

namespace instance {
namespace {

using namespace std::chrono_literals;

TEST(Concurrently, EveryIndexOnceAndAtMostWidthAtATime) {
  testing::Overlap overlap(3);
  std::mutex mu;
  std::vector<int> calls(40, 0);
  std::set<std::thread::id> threads;
  for_each_concurrently(calls.size(), 3, [&](std::size_t i) {
    overlap.hold();
    std::lock_guard lock(mu);
    ++calls[i];
    threads.insert(std::this_thread::get_id());
  });
  EXPECT_EQ(calls, std::vector<int>(40, 1));
  EXPECT_EQ(overlap.most(), 3);
  EXPECT_EQ(threads.size(), 3u);
  EXPECT_TRUE(threads.contains(std::this_thread::get_id())) << "the caller is one of them";
}

TEST(Concurrently, WidthOneOrASingleCallRunsInOrderOnTheCallingThread) {
  const auto caller = std::this_thread::get_id();
  for (const auto& [n, width] : {std::pair<std::size_t, std::size_t>{5, 1}, {1, 4}, {0, 4}}) {
    std::vector<std::size_t> order;
    for_each_concurrently(n, width, [&](std::size_t i) {
      EXPECT_EQ(std::this_thread::get_id(), caller);
      order.push_back(i);
    });
    std::vector<std::size_t> expected(n);
    for (std::size_t i = 0; i < n; ++i) expected[i] = i;
    EXPECT_EQ(order, expected) << n << " calls, width " << width;
  }
}

TEST(Concurrently, GetConcurrentlyAnswersEachKeyAsGetDoesInTheOrderOfTheKeys) {
  auto store = make_memory_store();
  std::vector<Key> keys;
  for (int i = 0; i < 20; ++i) {
    keys.push_back(*Key::parse("instances/r" + std::to_string(i)));
    if (i % 3 != 0) {
      ASSERT_TRUE(store->create(keys.back(), "doc " + std::to_string(i)));
    }
  }
  auto read = get_concurrently(*store, keys, 4);
  ASSERT_TRUE(read.has_value());
  ASSERT_EQ(read->size(), keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const auto one = store->get(keys[i]);
    ASSERT_EQ((*read)[i].has_value(), one.has_value()) << keys[i].str();
    if (one) {
      EXPECT_EQ((*read)[i]->data, one->data);
      EXPECT_EQ((*read)[i]->version, one->version);
    } else {
      EXPECT_EQ((*read)[i].error().code, Errc::not_found);
    }
  }
}

}  // namespace
}  // namespace instance
