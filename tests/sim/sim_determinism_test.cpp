// The simulator's kernel and model are deterministic: events run in (time,
// sequence) order, actors take turns under one baton, and a run is a pure
// function of its seed (same seed, same trace hash).
#include <gtest/gtest.h>

#include "sim.hpp"
#include "world.hpp"

namespace instance::sim {
namespace {

using namespace std::chrono_literals;

TEST(SimWorld, EventsRunInTimeThenPostingOrder) {
  World w;
  std::vector<int> order;
  w.at(20ms, [&] { order.push_back(3); });
  w.at(10ms, [&] { order.push_back(1); });
  w.at(10ms, [&] { order.push_back(2); });
  w.at(10ms, [&] { w.at(w.now(), [&] { order.push_back(4); }); });  // same time, later seq
  w.run(1s);
  EXPECT_EQ(order, (std::vector<int>{1, 2, 4, 3}));
  EXPECT_EQ(w.now(), 1s);
}

TEST(SimWorld, ActorsTakeTurnsUnderOneBaton) {
  World w;
  std::vector<std::string> order;
  int running = 0;
  auto body = [&](std::string name, Time step) {
    return [&, name, step] {
      for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(++running, 1);  // nobody else runs meanwhile
        order.push_back(name + std::to_string(i));
        World::Actor* self = w.current();
        w.at(w.now() + step, [&w, self] { w.resume(self); });
        --running;
        w.block();
      }
    };
  };
  World::Actor* a = w.spawn("a", body("a", 10ms));
  World::Actor* b = w.spawn("b", body("b", 15ms));
  w.at(0ms, [&] { w.resume(a); });
  w.at(0ms, [&] { w.resume(b); });
  w.run(1s);
  // a at 0, 10, 20; b at 0, 15, 30.
  EXPECT_EQ(order, (std::vector<std::string>{"a0", "b0", "a1", "b1", "a2", "b2"}));
}

TEST(SimWorld, ShutdownFinishesBlockedActors) {
  World w;
  bool finished = false;
  World::Actor* a = w.spawn("a", [&] {
    w.block();  // nobody will wake it before the end
    finished = true;
  });
  w.at(0ms, [&] { w.resume(a); });
  w.run(1s);
  EXPECT_TRUE(finished);
}

Config small(Mode mode) {
  Config c;
  c.mode = mode;
  c.guards = 5;
  c.duration = 15s;
  c.crashes_per_minute = 4;
  c.pauses_per_minute = 2;
  c.partitions_per_minute = 2;
  return c;
}

TEST(SimRun, TheSameSeedGivesTheSameTrace) {
  for (Mode mode : {Mode::announce, Mode::verify, Mode::exclusive, Mode::automatic}) {
    const RunResult a = run_one(small(mode), 7);
    const RunResult b = run_one(small(mode), 7);
    EXPECT_EQ(a.trace, b.trace) << to_string(mode);
    EXPECT_EQ(a.claims, b.claims);
    EXPECT_EQ(a.store_ops, b.store_ops);
    EXPECT_EQ(a.events, b.events);
    EXPECT_EQ(a.overlaps.size(), b.overlaps.size());
    EXPECT_GT(a.claims, 0u) << to_string(mode);
    EXPECT_NE(a.trace, run_one(small(mode), 8).trace) << to_string(mode);
  }
}

TEST(SimRun, AnnounceCollidesAtStartUpAndExclusiveDoesNot) {
  Config c = small(Mode::announce);
  c.guards = 8;
  c.crashes_per_minute = c.pauses_per_minute = c.partitions_per_minute = 0;
  c.start_spread = 1ms;
  std::size_t announce = 0;
  for (std::uint64_t seed = 1; seed <= 10; ++seed) announce += run_one(c, seed).overlaps.size();
  EXPECT_GT(announce, 0u);
  c.mode = Mode::exclusive;
  for (std::uint64_t seed = 1; seed <= 10; ++seed) EXPECT_TRUE(run_one(c, seed).overlaps.empty());
}

}  // namespace
}  // namespace instance::sim
