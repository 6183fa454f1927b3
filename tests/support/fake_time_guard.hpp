// Guards on a fake clock that the test drives (their renewals run only when
// it advances the scheduler), over stores on real servers, counting the
// claims they lose: what a test of a server restart mid-claim needs.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>

#include "instance/guard.hpp"
#include "instance/testing.hpp"
#include "support/test_support.hpp"

namespace instance::testing {

class FakeTimeGuards {
 public:
  std::shared_ptr<FakeClock> clock = std::make_shared<FakeClock>();
  std::shared_ptr<ManualScheduler> scheduler = std::make_shared<ManualScheduler>(clock);
  std::shared_ptr<CapturingLogger> logger = std::make_shared<CapturingLogger>();
  int losses = 0;
  std::optional<Error> loss;  // the last one

  // A guard in auto mode (ttl 30 s, max-skew 3 s unless given) on `store`.
  Guard guard(std::shared_ptr<Store> store, std::string id, Duration ttl = std::chrono::seconds(30),
              Duration max_skew = std::chrono::seconds(3)) {
    GuardOptions g{.ttl = ttl,
                   .id = std::move(id),
                   .clock = clock,
                   .scheduler = scheduler,
                   .logger = logger,
                   .mode = Mode::automatic,
                   .max_skew = max_skew};
    g.on_lost = [this](const Error& e) {
      ++losses;
      loss = e;
    };
    return Guard::create(std::move(store), g).value();
  }
};

// `g` is refused: another instance holds the claim.
inline void expect_refused(Guard& g) {
  auto c = g.claim();
  ASSERT_FALSE(c.has_value()) << "a second holder got in";
  EXPECT_EQ(c.error().error.code, Errc::another_instance) << c.error().error.message;
}

}  // namespace instance::testing
