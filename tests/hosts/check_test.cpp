// The multi-host harness's checker (tests/hosts/check.hpp) on event logs
// written by hand: it finds overlaps, epochs that did not increase, and the
// resolution times of a fault.
#include "hosts/check.hpp"

#include <gtest/gtest.h>

namespace {

hosts::Report run(const std::string& log) {
  std::size_t bad = 0;
  auto events = hosts::parse_events(log, &bad);
  EXPECT_EQ(bad, 0u);
  return hosts::check(std::move(events));
}

constexpr std::int64_t kMs = 1000000;

TEST(HostsCheck, ASuccessorStartingAfterTheHolderStoppedIsNoOverlap) {
  const auto r =
      run("1000000 start h1 3\n"
          "5000000 fault h1 partition\n"
          "9000000 stop h1 3\n"
          "12000000 start h2 4\n"
          "15000000 heal h1 partition\n");
  EXPECT_EQ(r.intervals.size(), 2u);
  EXPECT_TRUE(r.overlaps.empty());
  EXPECT_TRUE(r.regressions.empty());
  ASSERT_EQ(r.resolutions.size(), 1u);
  const auto& res = r.resolutions[0];
  EXPECT_TRUE(res.hit_holder);
  EXPECT_EQ(res.fenced, 4 * kMs);
  EXPECT_EQ(res.takeover, 7 * kMs);
  EXPECT_EQ(res.handover, 3 * kMs);
  EXPECT_EQ(res.healed, 10 * kMs);
}

TEST(HostsCheck, TwoChildrenRunningAtOnceAreAnOverlap) {
  const auto r =
      run("1000000 start h1 3\n"
          "4000000 start h2 4\n"
          "6000000 stop h1 3\n");
  ASSERT_EQ(r.overlaps.size(), 1u);
  EXPECT_EQ(r.overlaps[0].older.host, "h1");
  EXPECT_EQ(r.overlaps[0].to - r.overlaps[0].from, 2 * kMs);
  EXPECT_FALSE(r.overlaps[0].after_pause);
  EXPECT_EQ(r.unexpected_overlaps(), 1u);
}

TEST(HostsCheck, AChildWithoutStopEndsWithItsGuardOrRunsToTheEnd) {
  const auto r =
      run("1000000 start h1 -\n"
          "3000000 exit h1 137\n"
          "4000000 start h2 -\n"
          "9000000 start h3 -\n");
  ASSERT_EQ(r.intervals.size(), 3u);
  EXPECT_EQ(r.intervals[0].end, 3 * kMs);
  EXPECT_TRUE(r.intervals[1].open);
  // h2 never stopped: it overlaps h3 from h3's start to the log's end (zero
  // length here), so only a later event makes it count.
  EXPECT_TRUE(r.overlaps.empty());
  const auto r2 =
      run("4000000 start h2 -\n"
          "9000000 start h3 -\n"
          "10000000 heal h1 x\n");
  EXPECT_EQ(r2.overlaps.size(), 1u);
}

TEST(HostsCheck, AnOverlapAfterAPauseOfTheOlderHolderIsClassifiedAsSuch) {
  const auto r =
      run("1000000 start h1 3\n"
          "2000000 pause h1 -\n"
          "8000000 start h2 4\n"
          "9000000 resume h1 -\n"
          "9500000 stop h1 3\n");
  ASSERT_EQ(r.overlaps.size(), 1u);
  EXPECT_TRUE(r.overlaps[0].after_pause);
  EXPECT_EQ(r.overlaps[0].to - r.overlaps[0].from, kMs / 2);  // from the resume on
  EXPECT_EQ(r.unexpected_overlaps(), 0u);
  ASSERT_EQ(r.resolutions.size(), 1u);
  EXPECT_EQ(r.resolutions[0].fault, "pause");
  EXPECT_EQ(r.resolutions[0].takeover, 6 * kMs);
}

TEST(HostsCheck, AnEpochThatDidNotIncreaseIsReported) {
  const auto r =
      run("1000000 start h1 5\n"
          "2000000 stop h1 5\n"
          "3000000 start h2 5\n"
          "4000000 stop h2 5\n"
          "5000000 start h1 4\n"
          "6000000 stop h1 4\n"
          "7000000 start h2 6\n");
  ASSERT_EQ(r.regressions.size(), 2u);
  EXPECT_EQ(r.regressions[0].later.host, "h2");
  EXPECT_EQ(*r.regressions[1].later.epoch, 4);
}

TEST(HostsCheck, AFaultOnTheStandbyDoesNotHitTheHolder) {
  const auto r =
      run("1000000 start h1 1\n"
          "2000000 fault h2 partition\n"
          "3000000 heal h2 partition\n"
          "4000000 fault * restart\n"
          "5000000 heal * restart\n"
          "6000000 end * -\n"
          "6500000 stop h1 1\n");
  ASSERT_EQ(r.resolutions.size(), 2u);
  EXPECT_FALSE(r.resolutions[0].hit_holder);
  EXPECT_TRUE(r.resolutions[1].hit_holder);  // a server fault hits whoever holds
  EXPECT_FALSE(r.resolutions[1].fenced);     // the holder kept running until the end
}

TEST(HostsCheck, WhatFollowsTheNextFaultIsNotCountedForThisOne) {
  const auto r =
      run("1000000 start h1 1\n"
          "2000000 fault h1 reset\n"
          "2100000 heal h1 reset\n"
          "3000000 fault * restart\n"
          "4000000 stop h1 1\n"
          "5000000 start h2 2\n"
          "6000000 heal * restart\n");
  ASSERT_EQ(r.resolutions.size(), 2u);
  EXPECT_FALSE(r.resolutions[0].fenced);  // the reset did not stop h1: the restart did
  EXPECT_FALSE(r.resolutions[0].takeover);
  EXPECT_EQ(r.resolutions[1].fenced, 1 * kMs);
  EXPECT_EQ(r.resolutions[1].takeover, 2 * kMs);
}

TEST(HostsCheck, ALineThatDoesNotParseIsNamed) {
  std::size_t bad = 0;
  EXPECT_TRUE(hosts::parse_events("1 start h1 1\nnonsense\n", &bad).empty());
  EXPECT_EQ(bad, 2u);
  EXPECT_TRUE(hosts::parse_events("1 launch h1 1\n", &bad).empty());
  EXPECT_EQ(bad, 1u);
}

}  // namespace
