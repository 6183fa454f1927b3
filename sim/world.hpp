// The simulator's kernel: virtual time, events and actors under one baton.
//
// Events run in (time, sequence number) order on the thread that called
// run(). An actor is an OS thread that runs only when the loop hands it the
// baton (resume) and gives it back when it blocks (block) or finishes, so
// exactly one thread runs at any moment and a run is a pure function of its
// inputs: the same posts in the same order give the same trace.
//
// Thread safety: none needed and none given: every member is called by the
// thread holding the baton (the loop or the resumed actor). The semaphores
// that pass the baton order all memory accesses.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <queue>
#include <semaphore>
#include <string>
#include <thread>
#include <vector>

namespace instance::sim {

using Time = std::chrono::nanoseconds;  // virtual global time since the start

class World {
 public:
  struct Actor {
    std::string name;
    std::function<void()> body;
    std::binary_semaphore go{0};
    std::thread thread;
    bool finished = false;
  };

  World() = default;
  World(const World&) = delete;
  World& operator=(const World&) = delete;
  ~World();

  Time now() const noexcept { return now_; }
  // Runs `fn` on the loop at time `t` (never earlier than now).
  void at(Time t, std::function<void()> fn);
  // Starts an actor; its body first runs when resumed (or at shutdown).
  Actor* spawn(std::string name, std::function<void()> body);
  // From an event: runs `a` until it blocks or finishes.
  void resume(Actor* a);
  // From an actor: gives the baton back until resumed. Returns at once
  // while shutting down.
  void block();
  // The actor holding the baton (nullptr on the loop).
  Actor* current() const noexcept { return current_; }
  // Runs events up to and including time `end`, then shuts down: every actor
  // is resumed until it finishes (its blocks return at once).
  void run(Time end);
  bool stopping() const noexcept { return stopping_; }
  std::uint64_t events() const noexcept { return events_; }

  // A running FNV-1a hash of whatever the model mixes in: the run's trace.
  void mix(std::uint64_t v) noexcept;
  std::uint64_t trace() const noexcept { return trace_; }

 private:
  struct Event {
    Time time;
    std::uint64_t seq;
    std::function<void()> fn;
    bool operator>(const Event& o) const { return time != o.time ? time > o.time : seq > o.seq; }
  };
  std::priority_queue<Event, std::vector<Event>, std::greater<>> queue_;
  std::vector<std::unique_ptr<Actor>> actors_;
  std::binary_semaphore back_{0};
  Actor* current_ = nullptr;
  Time now_{0};
  std::uint64_t seq_ = 0;
  std::uint64_t events_ = 0;
  std::uint64_t trace_ = 1469598103934665603ull;
  bool stopping_ = false;
};

}  // namespace instance::sim
