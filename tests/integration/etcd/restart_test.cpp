// etcd stopped and restarted in the middle of a claim: the holder's renewals
// fail while it is down and succeed once it is back (etcd keeps leases
// across a restart), the claim is never lost, nothing is left corrupt, and
// the next holder gets a larger epoch. The guard's time is a FakeClock with
// a ManualScheduler: renewals run when the test says, never by sleeping.
// The server is an auth-enabled one of this test's own, so the restart also
// shows the store logging in again (etcd forgets simple tokens on restart).
#include <gtest/gtest.h>

#include "instance/guard.hpp"
#include "instance/testing.hpp"
#include "server.hpp"
#include "support/test_support.hpp"

namespace instance::testing {
namespace {

using namespace std::chrono_literals;

TEST(EtcdRestart, TheHolderRenewsAfterTheServerComesBack) {
  if (const auto missing = etcd_missing(); !missing.empty()) GTEST_SKIP() << missing;
  EtcdServer server({.root_password = EtcdServer::kRootPassword});
  ASSERT_TRUE(server.running());
  const std::string prefix = EtcdServer::fresh_prefix();
  auto options = server.options(prefix);
  options.retry_deadline = 2s;  // a renewal against a stopped server fails soon
  auto store = make_etcd_store(options).value();

  // The lease's TTL runs on the server's real clock: 30 s outlasts the restart.
  auto [clock, scheduler, logger, guard] = manual_guard(store, 30s, "holder");
  auto claim = guard.claim();
  ASSERT_TRUE(claim) << claim.error().error.message;
  const auto first_epoch = claim->epoch().value();

  server.stop();
  scheduler->advance(10s);  // one renewal, against a stopped server
  EXPECT_TRUE(claim->active());
  EXPECT_TRUE(logger->contains("renewal failed")) << "the renewal did not fail while etcd was down";

  ASSERT_TRUE(server.start());
  const auto renewed_before = claim->record().renewed_at;
  scheduler->advance(10s);  // the next renewal, after the restart
  ASSERT_TRUE(claim->active()) << (claim->loss() ? claim->loss()->message : "");
  EXPECT_NE(claim->record().renewed_at, renewed_before)
      << "the renewal after the restart failed: " << logger->lines().back().text();
  scheduler->advance(10s);  // past the point a missed renewal would have fenced us
  ASSERT_TRUE(claim->active()) << (claim->loss() ? claim->loss()->message : "");

  // Still exclusive after the restart, and the state reads cleanly.
  auto other_store = make_etcd_store(server.options(prefix)).value();
  auto other =
      Guard::create(other_store, {.ttl = 30s, .id = "other", .mode = Mode::exclusive}).value();
  auto refused = other.claim();
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().error.code, Errc::another_instance) << refused.error().error.message;
  auto record = other_store->get(Key::parse("instances/holder").value());
  ASSERT_TRUE(record) << record.error().message;
  EXPECT_NE(record->data.find("\"holder\""), std::string::npos);

  ASSERT_TRUE(claim->stand_down());
  auto next = other.claim();
  ASSERT_TRUE(next) << next.error().error.message;
  EXPECT_GT(next->epoch().value(), first_epoch);
  ASSERT_TRUE(next->stand_down());
}

}  // namespace
}  // namespace instance::testing
