// A guard on a real PostgreSQL primary with a streaming standby
// (servers/postgres_cluster.sh), its store URL naming both hosts: the
// primary crashes in the middle of a claim and the standby is promoted.
// With synchronous replication the guarantee line promises that the
// promoted standby keeps the claim, and it does: the next renewal reconnects
// to the new primary (libpq's target_session_attrs=read-write), refreshes
// the same lease, the epoch stays, others are refused. With asynchronous
// replication the line says a failover may lose the lease row; here the
// failover comes once the standby has the row (the test waits for it), so
// the claim is kept the same way, and nobody else holds beside the holder.
// The holder's time is a FakeClock with a ManualScheduler: renewals run
// when the test says; the leases run on the server's real clock.
#include <gtest/gtest.h>

#include <chrono>
#include <iostream>
#include <thread>

#include "instance/open_store.hpp"
#include "server.hpp"
#include "support/fake_time_guard.hpp"

namespace instance::testing {
namespace {

using namespace std::chrono_literals;
using Steady = std::chrono::steady_clock;

long long ms_since(Steady::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Steady::now() - start).count();
}

void failover_during_a_claim(bool synchronous) {
  PostgresCluster cluster(synchronous);
  if (cluster.absent()) GTEST_SKIP() << cluster.why();
  ASSERT_TRUE(cluster.running()) << cluster.why();
  const std::string table = PostgresServer::fresh_table();
  const std::string url = cluster.store_url(table);
  auto store = open_store(url, no_env()).value();
  ASSERT_EQ(store->describe(), "postgres://127.0.0.1:" + std::to_string(cluster.primary_port()) +
                                   ",127.0.0.1:" + std::to_string(cluster.standby_port()) +
                                   "/guard?table=" + table);
  const std::string agreement = store->capabilities().agreement;
  EXPECT_NE(agreement.find(synchronous ? "synchronous replication (synchronous_standby_names"
                                       : "asynchronous replication"),
            std::string::npos)
      << agreement;
  EXPECT_NE(agreement.find("2 hosts in the store URL, 1 standby streaming"), std::string::npos)
      << agreement;

  // 9 s: renewals every 3 s, each with a retry deadline of 3 s (ttl / 3).
  FakeTimeGuards t;
  auto holder = t.guard(store, "holder", 9s, 1s);
  auto claim = holder.claim();
  ASSERT_TRUE(claim) << claim.error().error.message;
  const auto epoch = claim->epoch().value();
  auto other = [&](const char* id) {
    return t.guard(open_store(url, no_env()).value(), id, 9s, 1s);
  };

  // The standby has the lease row (at once when synchronous; within 5 s).
  const std::string lease = "SELECT epoch::text FROM " + table + " WHERE kind = 'l'";
  const auto wait_start = Steady::now();
  while (admin_sql(cluster.standby_port(), lease, true) != std::to_string(epoch)) {
    ASSERT_FALSE(synchronous) << "a synchronous standby lacks the confirmed lease row";
    ASSERT_LT(ms_since(wait_start), 5000) << "the standby has no lease row after 5 s";
    std::this_thread::sleep_for(20ms);  // polling the server's state, bounded
  }

  cluster.crash_primary();
  const auto crashed = Steady::now();
  cluster.promote();
  const auto promote_ms = ms_since(crashed);
  const auto renewed_before = claim->record().renewed_at;
  const auto renew_start = Steady::now();
  t.scheduler->advance(3s);
  const auto renew_ms = ms_since(renew_start);
  ASSERT_TRUE(claim->active()) << (claim->loss() ? claim->loss()->message : "");
  EXPECT_NE(claim->record().renewed_at, renewed_before)
      << "the renewal after the failover failed: " << t.logger->lines().back().text();
  EXPECT_EQ(claim->epoch().value(), epoch);
  for (int i = 0; i < 3; ++i) {  // a ttl's worth of renewals on the new primary
    t.scheduler->advance(3s);
    ASSERT_TRUE(claim->active()) << (claim->loss() ? claim->loss()->message : "");
  }
  EXPECT_EQ(t.losses, 0);
  auto intruder = other("other");
  expect_refused(intruder);
  std::cout << "[ figures ] " << (synchronous ? "sync" : "async") << " failover: promoted in "
            << promote_ms << " ms, renewal on the new primary " << renew_ms
            << " ms, claim kept, other refused\n";
  ASSERT_TRUE(claim->stand_down());
}

TEST(PostgresCluster, SynchronousStandbyPromotedDuringAClaimKeepsIt) {
  failover_during_a_claim(true);
}

TEST(PostgresCluster, AsynchronousStandbyPromotedAfterTheLeaseReplicatedKeepsIt) {
  failover_during_a_claim(false);
}

}  // namespace
}  // namespace instance::testing
