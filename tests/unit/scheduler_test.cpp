#include <gtest/gtest.h>

#include <filesystem>
#include <future>
#include <mutex>
#include <string>
#include <thread>

#include "instance/scheduler.hpp"
#include "instance/testing.hpp"

namespace instance {
namespace {

using namespace std::chrono_literals;

TEST(ThreadScheduler, RunsADueTask) {
  auto s = thread_scheduler();
  std::promise<void> ran;
  s->schedule(0s, [&] { ran.set_value(); });
  EXPECT_EQ(ran.get_future().wait_for(10s), std::future_status::ready);
}

TEST(ThreadScheduler, RunsTasksInDueOrderAndAllowsSchedulingFromATask) {
  auto s = thread_scheduler();
  std::promise<std::string> done;
  std::string order;
  s->schedule(0s, [&] {
    order += "a";
    s->schedule(0s, [&] {
      order += "c";
      done.set_value(order);
    });
  });
  auto f = done.get_future();
  ASSERT_EQ(f.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(f.get(), "ac");
}

TEST(ThreadScheduler, ACancelledTaskNeverRuns) {
  auto s = thread_scheduler();
  bool ran = false;
  const TaskId id = s->schedule(1h, [&] { ran = true; });
  EXPECT_TRUE(s->cancel(id));
  EXPECT_FALSE(s->cancel(id));
  // A task scheduled after it still runs, so the worker is alive.
  std::promise<void> later;
  s->schedule(0s, [&] { later.set_value(); });
  ASSERT_EQ(later.get_future().wait_for(10s), std::future_status::ready);
  EXPECT_FALSE(ran);
}

TEST(ThreadScheduler, DestructionDropsPendingTasks) {
  bool ran = false;
  {
    auto s = thread_scheduler();
    s->schedule(1h, [&] { ran = true; });
  }
  EXPECT_FALSE(ran);
}

// A task may drop the last reference to its own scheduler (a claim's state
// owns its guard's scheduler, and a renewal or the history's upkeep may be
// the last to hold that state): the scheduler goes from inside its worker,
// which must neither join itself (std::system_error, "Resource deadlock
// avoided") nor touch the scheduler after it is gone.
TEST(ThreadScheduler, ATaskMayDropTheLastReferenceToItsScheduler) {
  for (int round = 0; round < 20; ++round) {
    auto s = thread_scheduler();
    std::weak_ptr<Scheduler> weak = s;
    std::promise<void> released, gone;
    auto owner = std::make_shared<std::shared_ptr<Scheduler>>(s);
    s->schedule(0s, [owner, released = released.get_future().share(), &gone] {
      released.wait();
      owner->reset();  // the last reference: the scheduler goes, here, in its worker
      gone.set_value();
    });
    s.reset();
    owner.reset();  // only the task holds the scheduler now
    released.set_value();
    ASSERT_EQ(gone.get_future().wait_for(10s), std::future_status::ready);
    EXPECT_TRUE(weak.expired());
  }
}

// The threads of this process, from /proc (gtest runs tests one at a time).
std::size_t thread_count() {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& entry :
       std::filesystem::directory_iterator("/proc/self/task")) {
    ++n;
  }
  return n;
}

// One task blocked in a slow call must not hold back another that is due,
// whether the second was queued before the first started or while it ran.
TEST(ThreadScheduler, ADueTaskRunsWhileAnotherIsStuck) {
  for (const bool queued_first : {true, false}) {
    auto s = thread_scheduler();
    std::promise<void> second_ran, first_started;
    auto ran = second_ran.get_future().share();
    s->schedule(0s, [&first_started, ran] {
      first_started.set_value();
      ran.wait_for(10s);
    });
    auto second = [&] { s->schedule(0s, [&] { second_ran.set_value(); }); };
    if (queued_first) {
      second();
      first_started.get_future().wait();
    } else {
      first_started.get_future().wait();
      second();
    }
    EXPECT_EQ(ran.wait_for(10s), std::future_status::ready) << "queued first: " << queued_first;
  }
}

// A scheduler that only holds a far task runs one thread, not two: a guard
// that claims and stands down before its first renewal needs no more.
TEST(ThreadScheduler, StartsItsSecondThreadOnlyWhenATaskMustWait) {
  const std::size_t before = thread_count();
  auto s = thread_scheduler();
  EXPECT_EQ(thread_count(), before);
  s->schedule(1h, [] {});
  s->schedule(2h, [] {});
  EXPECT_EQ(thread_count(), before + 1);
  std::promise<void> release;
  auto released = release.get_future().share();
  std::promise<void> started;
  s->schedule(0s, [&started, released] {
    started.set_value();
    released.wait();
  });
  started.get_future().wait();
  // The far tasks still wait while the first worker is busy: a second one
  // watches them.
  EXPECT_EQ(thread_count(), before + 2);
  release.set_value();
}

// With one worker (the tool's: its main thread watches the self-fencing
// deadline itself) tasks run in turn on one thread: those queued while one
// runs wait for it, however long it takes, and then run in due order.
TEST(ThreadScheduler, WithOneWorkerRunsTasksInTurnOnOneThread) {
  const std::size_t before = thread_count();
  auto s = thread_scheduler(1);
  std::promise<void> release, started;
  auto released = release.get_future().share();
  std::mutex mu;
  std::string order;
  std::promise<std::string> done;
  s->schedule(0s, [&, released] {
    started.set_value();
    released.wait();
    std::lock_guard lock(mu);
    order += "a";
  });
  started.get_future().wait();
  // Queued while the first runs: with a second worker, b would run before
  // a ends.
  s->schedule(0s, [&] {
    std::lock_guard lock(mu);
    order += "b";
  });
  s->schedule(0s, [&] {
    std::lock_guard lock(mu);
    order += "c";
    done.set_value(order);
  });
  EXPECT_EQ(thread_count(), before + 1);  // nobody else watches the queue
  release.set_value();
  auto f = done.get_future();
  ASSERT_EQ(f.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(f.get(), "abc");
  EXPECT_EQ(thread_count(), before + 1);
}

TEST(ManualScheduler, RunsTasksOnlyWhenTheClockReachesThem) {
  auto clock = std::make_shared<FakeClock>();
  ManualScheduler s(clock);
  std::vector<int> ran;
  s.schedule(10s, [&] { ran.push_back(10); });
  s.schedule(5s, [&] { ran.push_back(5); });
  EXPECT_EQ(s.run_due(), 0);
  s.advance(4s);
  EXPECT_TRUE(ran.empty());
  s.advance(6s);
  EXPECT_EQ(ran, (std::vector<int>{5, 10}));
}

TEST(ManualScheduler, AdvanceRunsEachTaskAtItsOwnTime) {
  auto clock = std::make_shared<FakeClock>();
  ManualScheduler s(clock);
  const MonoTime start = clock->monotonic();
  std::vector<Duration> seen;
  std::function<void()> tick = [&] {
    seen.push_back(clock->monotonic() - start);
    s.schedule(3s, tick);
  };
  s.schedule(3s, tick);
  s.advance(10s);
  EXPECT_EQ(seen, (std::vector<Duration>{3s, 6s, 9s}));
  EXPECT_EQ(clock->monotonic() - start, Duration{10s});
  EXPECT_EQ(s.next_due(), std::optional<Duration>(2s));
}

}  // namespace
}  // namespace instance
