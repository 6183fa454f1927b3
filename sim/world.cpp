#include "world.hpp"

#include <cassert>

namespace instance::sim {

World::~World() {
  if (!stopping_) run(now_);
  for (auto& a : actors_) {
    if (a->thread.joinable()) a->thread.join();
  }
}

void World::at(Time t, std::function<void()> fn) {
  queue_.push(Event{std::max(t, now_), seq_++, std::move(fn)});
}

World::Actor* World::spawn(std::string name, std::function<void()> body) {
  auto actor = std::make_unique<Actor>();
  actor->name = std::move(name);
  actor->body = std::move(body);
  Actor* a = actor.get();
  a->thread = std::thread([this, a] {
    a->go.acquire();
    a->body();
    a->finished = true;
    back_.release();
  });
  actors_.push_back(std::move(actor));
  return a;
}

void World::resume(Actor* a) {
  if (a->finished) return;
  assert(current_ == nullptr);
  current_ = a;
  a->go.release();
  back_.acquire();
  current_ = nullptr;
}

void World::block() {
  if (stopping_) return;
  Actor* a = current_;
  assert(a != nullptr);
  back_.release();
  a->go.acquire();
}

void World::run(Time end) {
  while (!queue_.empty() && queue_.top().time <= end) {
    Event e = std::move(const_cast<Event&>(queue_.top()));
    queue_.pop();
    now_ = e.time;
    ++events_;
    e.fn();
  }
  now_ = std::max(now_, end);
  stopping_ = true;
  while (!queue_.empty()) queue_.pop();
  for (auto& a : actors_) {
    if (!a->finished) resume(a.get());
  }
}

void World::mix(std::uint64_t v) noexcept {
  for (int i = 0; i < 8; ++i) {
    trace_ ^= (v >> (8 * i)) & 0xFF;
    trace_ *= 1099511628211ull;
  }
}

}  // namespace instance::sim
