// A guard on a real three-member etcd cluster (servers/etcd_cluster.sh):
// the member it talks to crashes in the middle of a claim, and the holder
// keeps its claim through another member (the same lease, renewed there);
// then two of three are down, no majority is left, and the holder fences
// itself while nobody else gets in; once the members are back another
// guard claims. The holder's time is a FakeClock with a ManualScheduler:
// renewals run when the test says, never by sleeping; the leases run on
// the cluster's real clock.
#include <gtest/gtest.h>

#include <chrono>
#include <iostream>

#include "instance/guard.hpp"
#include "instance/open_store.hpp"
#include "instance/testing.hpp"
#include "server.hpp"
#include "support/test_support.hpp"

namespace instance::testing {
namespace {

using namespace std::chrono_literals;
using Steady = std::chrono::steady_clock;

OpenOptions no_env() {
  OpenOptions o;
  o.getenv = [](std::string_view) { return std::optional<std::string>{}; };
  return o;
}

// The members with the leader first: the guard talks to the leader, so
// stopping it forces both a switch of endpoint and an election.
std::vector<int> leader_first(const EtcdCluster& cluster) {
  const int leader = cluster.leader();
  std::vector<int> order{leader == 0 ? 1 : leader};
  for (int i = 1; i <= 3; ++i) {
    if (i != order.front()) order.push_back(i);
  }
  return order;
}

long long ms_since(Steady::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Steady::now() - start).count();
}

TEST(EtcdCluster, TheHolderKeepsItsClaimWhenItsMemberCrashesAndFencesItselfWithoutAMajority) {
  if (const auto missing = etcd_missing(); !missing.empty()) GTEST_SKIP() << missing;
  EtcdCluster cluster;
  ASSERT_TRUE(cluster.running());
  const std::string prefix = EtcdServer::fresh_prefix();
  const auto order = leader_first(cluster);
  auto logger = std::make_shared<CapturingLogger>();
  auto open = no_env();
  open.logger = logger;
  auto store = open_store(cluster.store_url(order, prefix), open).value();

  // 9 s: renewals every 3 s, each with a retry deadline of 3 s (ttl / 3);
  // the lease lives 9 s on the cluster's clock from the last renewal.
  auto [clock, scheduler, held_logger, guard] = manual_guard(store, 9s, "holder", logger);
  auto claim = guard.claim();
  ASSERT_TRUE(claim) << claim.error().error.message;
  const auto epoch = claim->epoch().value();

  // Others, on the other members only, are refused while it holds.
  auto others_url = cluster.store_url({order[1], order[2]}, prefix);
  auto refused_by = [&](const char* id) {
    auto other_store = open_store(others_url, no_env()).value();
    auto other = Guard::create(other_store, {.ttl = 9s, .id = id, .mode = Mode::exclusive}).value();
    return other.claim();
  };

  // The member it talks to (the leader) crashes: the next renewal goes to
  // another member, after an election, and keeps the same lease.
  cluster.stop_member(order[0], /*crash=*/true);
  const auto renewed_before = claim->record().renewed_at;
  const auto switch_start = Steady::now();
  scheduler->advance(3s);
  const auto switch_ms = ms_since(switch_start);
  ASSERT_TRUE(claim->active()) << (claim->loss() ? claim->loss()->message : "");
  EXPECT_NE(claim->record().renewed_at, renewed_before)
      << "the renewal after the crash failed: " << logger->lines().back().text();
  EXPECT_TRUE(logger->contains("trying the next one"));
  EXPECT_EQ(claim->epoch().value(), epoch);
  for (int i = 0; i < 3; ++i) {  // a ttl's worth of renewals through the others
    scheduler->advance(3s);
    ASSERT_TRUE(claim->active()) << (claim->loss() ? claim->loss()->message : "");
  }
  auto refused = refused_by("other");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().error.code, Errc::another_instance) << refused.error().error.message;
  std::cout << "[ figures ] renewal across a member crash: " << switch_ms << " ms\n";

  // A second member stops: one of three is left, no majority. Renewals
  // fail; the holder is fenced before its ttl runs out after the last one.
  cluster.stop_member(order[1]);
  const auto fence_start = Steady::now();
  for (int i = 0; i < 4 && claim->active(); ++i) scheduler->advance(3s);
  const auto fence_ms = ms_since(fence_start);
  ASSERT_FALSE(claim->active()) << "the holder kept its claim without a majority";
  ASSERT_TRUE(claim->loss());
  std::cout << "[ figures ] fenced without a majority after " << fence_ms
            << " ms of real time (renewals of the fake clock)\n";
  auto no_quorum = refused_by("no-quorum");
  ASSERT_FALSE(no_quorum) << "a guard got in without a majority";
  EXPECT_NE(no_quorum.error().error.code, Errc::another_instance);

  // The members come back; once the old lease has run out on the cluster's
  // clock, another guard claims, with a larger epoch.
  ASSERT_TRUE(cluster.start_member(order[1]));
  ASSERT_TRUE(cluster.start_member(order[0]));
  auto next_store = open_store(cluster.store_url(order, prefix), no_env()).value();
  auto next = Guard::create(next_store, {.ttl = 9s, .id = "next", .mode = Mode::exclusive}).value();
  const auto claim_start = Steady::now();
  auto taken = next.claim_waiting({.timeout = 30s});
  ASSERT_TRUE(taken) << taken.error().error.message;
  EXPECT_GT(taken->epoch().value(), epoch);
  std::cout << "[ figures ] next claim after the majority returned: " << ms_since(claim_start)
            << " ms\n";
  ASSERT_TRUE(taken->stand_down());
}

}  // namespace
}  // namespace instance::testing
