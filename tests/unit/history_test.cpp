// The tenure history (instance/history.hpp): the documents and their keys,
// what the guard writes at a claim and at its end, how a successor closes a
// dead holder's tenure, pruning, and what analyse_history() finds.
#include "instance/history.hpp"

#include <gtest/gtest.h>

#include "instance/guard.hpp"
#include "instance/stores/counting.hpp"
#include "instance/stores/memory.hpp"
#include "instance/testing.hpp"
#include "support/test_support.hpp"

namespace instance {
namespace {

using namespace std::chrono_literals;
using testing::FailingStore;
using testing::Op;

WallTime at(std::int64_t seconds) {
  return WallTime{} + std::chrono::seconds(1'800'000'000 + seconds);
}

Tenure tenure(std::string id, std::int64_t from, std::optional<std::int64_t> to,
              std::string host = "h1") {
  Tenure t{.id = std::move(id),
           .host = std::move(host),
           .pid = 7,
           .mode = "exclusive",
           .started_at = at(from),
           .claimed_at = at(from),
           .max_skew = 2s};
  if (to) {
    t.ended_at = at(*to);
    t.end = "stood_down";
  }
  return t;
}

TEST(TenureDocument, RoundTripsEveryField) {
  Tenure t = tenure("a", 0, 5);
  t.epoch = 3;
  t.end = "lost";
  t.reason = "no renewal succeeded";
  t.claimed_at = at(0) + 1234567ns;
  EXPECT_EQ(decode_tenure(encode_tenure(t)).value(), t);
  Tenure open = tenure("b", 0, std::nullopt);
  EXPECT_EQ(decode_tenure(encode_tenure(open)).value(), open);
}

TEST(TenureDocument, RefusesWhatIsNotATenure) {
  for (std::string_view bad :
       {R"(not json)", R"([])", R"({"claimed_at":"2026-12-03T10:00:00Z"})", R"({"id":"a"})",
        R"({"id":"a","claimed_at":"yesterday"})",
        R"({"id":"a","claimed_at":"2026-12-03T10:00:00Z","end":"lost"})",
        R"({"id":"a","claimed_at":"2026-12-03T10:00:00Z",)"
        R"("ended_at":"2026-12-03T10:00:01Z","end":"vanished"})",
        R"({"id":"a","claimed_at":"2026-12-03T10:00:00Z","max_skew_ms":-1})"}) {
    auto t = decode_tenure(bad);
    ASSERT_FALSE(t) << bad;
    EXPECT_EQ(t.error().code, Errc::malformed) << bad;
    EXPECT_NE(t.error().message.find("not a tenure document"), std::string::npos);
  }
}

TEST(TenureKey, SortsByTimeAndNamesTheId) {
  const Key early = tenure_key("zz", at(0) + 5ns).value();
  const Key late = tenure_key("aa", at(10)).value();
  const Key later = tenure_key("aa", at(100)).value();
  EXPECT_LT(early.str(), late.str());
  EXPECT_LT(late.str(), later.str());
  EXPECT_TRUE(early.str().starts_with("history/"));
  EXPECT_TRUE(early.str().ends_with(".000000005Z-zz")) << early.str();
  EXPECT_TRUE(tenure_key("a b/c", at(0)).value().canonical());
  EXPECT_EQ(tenure_key("", at(0)).error().code, Errc::invalid);
}

TEST(AnalyseHistory, GapsBetweenTenuresAndNoOverlapWhenOneFollowsTheOther) {
  auto r = analyse_history({tenure("b", 20, 30), tenure("a", 0, 10), tenure("c", 31, std::nullopt)},
                           at(40));
  ASSERT_EQ(r.tenures.size(), 3u);
  EXPECT_EQ(r.tenures[0].id, "a") << "oldest first";
  EXPECT_FALSE(r.gap_before[0]);
  EXPECT_EQ(r.gap_before[1], Duration(10s));
  EXPECT_EQ(r.gap_before[2], Duration(1s));
  EXPECT_FALSE(r.end[2]) << "c holds now";
  EXPECT_TRUE(r.clean());
}

TEST(AnalyseHistory, AnOverlapOnOneHostCountsFromTheFirstNanosecond) {
  auto r = analyse_history({tenure("a", 0, 10), tenure("b", 9, 20)}, at(40));
  ASSERT_EQ(r.overlaps.size(), 1u);
  EXPECT_EQ(r.overlaps[0].amount, Duration(1s));
  EXPECT_EQ(r.tenures[r.overlaps[0].first].id, "a");
  EXPECT_EQ(r.tenures[r.overlaps[0].second].id, "b");
  EXPECT_FALSE(r.gap_before[1]);
  EXPECT_FALSE(r.clean());
}

TEST(AnalyseHistory, AcrossHostsTheClocksMaxSkewIsForgiven) {
  // Each holder's clock may be 2 s off: up to 4 s of apparent overlap is
  // no evidence; more is.
  EXPECT_TRUE(
      analyse_history({tenure("a", 0, 10, "h1"), tenure("b", 7, 20, "h2")}, at(40)).clean());
  auto r = analyse_history({tenure("a", 0, 10, "h1"), tenure("b", 5, 20, "h2")}, at(40));
  ASSERT_EQ(r.overlaps.size(), 1u);
  EXPECT_EQ(r.overlaps[0].amount, Duration(5s));
}

TEST(AnalyseHistory, AnOpenTenureFollowedByAnotherEndedByItsStartAtTheLatest) {
  auto r = analyse_history({tenure("a", 0, std::nullopt), tenure("b", 12, std::nullopt)}, at(40));
  EXPECT_TRUE(r.clean());
  EXPECT_EQ(r.end[0], at(12));
  EXPECT_TRUE(r.inferred_end[0]);
  EXPECT_FALSE(r.end[1]);
  // The same when the successor has ended too: the open tenure still ends,
  // at the latest, when b claimed, so the two do not overlap (only a holder
  // whose record is live again holds on: the next test).
  auto both = analyse_history({tenure("a", 0, std::nullopt), tenure("b", 12, 15)}, at(40));
  EXPECT_TRUE(both.clean()) << "b follows a: a ended by b's start at the latest";
}

TEST(AnalyseHistory, AnOpenTenureWhoseHolderStillHoldsOverlapsItsSuccessors) {
  // a's record is live now: it never stopped, although b claimed after it.
  auto r = analyse_history({tenure("a", 0, std::nullopt), tenure("b", 12, 15)}, at(40),
                           [](const Tenure& t) { return t.id == "a"; });
  ASSERT_EQ(r.overlaps.size(), 1u);
  EXPECT_EQ(r.overlaps[0].amount, Duration(3s));
  EXPECT_FALSE(r.inferred_end[0]);
  EXPECT_FALSE(r.end[0]) << "a holds now";
  // Closed as crashed by a successor, yet its record is live: it was paused,
  // not dead, and holds now.
  Tenure crashed = tenure("a", 0, 5);
  crashed.end = "crashed";
  auto paused = analyse_history({crashed, tenure("b", 12, 15)}, at(40),
                                [](const Tenure& t) { return t.id == "a"; });
  ASSERT_EQ(paused.overlaps.size(), 1u);
  EXPECT_EQ(paused.overlaps[0].amount, Duration(3s));
  Tenure stood = tenure("a", 0, 5);
  EXPECT_TRUE(
      analyse_history({stood, tenure("b", 12, 15)}, at(40), [](const Tenure&) { return true; })
          .clean())
      << "a tenure its holder closed itself is over, whatever the records say";
}

TEST(AnalyseHistory, AnEpochThatDoesNotGrowIsFound) {
  Tenure a = tenure("a", 0, 10), b = tenure("b", 11, 20), c = tenure("c", 21, 30);
  a.epoch = 4;
  b.epoch = 5;
  c.epoch = 5;
  auto r = analyse_history({a, b, c}, at(40));
  ASSERT_EQ(r.epoch_regressions.size(), 1u);
  EXPECT_EQ(r.tenures[r.epoch_regressions[0].earlier].id, "b");
  EXPECT_EQ(r.tenures[r.epoch_regressions[0].later].id, "c");
  EXPECT_FALSE(r.clean());
}

// ---- What the guard writes -----------------------------------------------

class GuardHistory : public ::testing::Test {
 protected:
  std::shared_ptr<FakeClock> clock = std::make_shared<FakeClock>();
  std::shared_ptr<ManualScheduler> scheduler = std::make_shared<ManualScheduler>(clock);
  std::shared_ptr<testing::CapturingLogger> logger = std::make_shared<testing::CapturingLogger>();
  std::shared_ptr<FailingStore> store = std::make_shared<FailingStore>(make_memory_store());

  GuardOptions options(std::string id, Mode mode = Mode::exclusive) {
    return {.ttl = 30s,
            .id = std::move(id),
            .host = "h1",
            .pid = 100,
            .clock = clock,
            .scheduler = scheduler,
            .logger = logger,
            .mode = mode,
            .check_lag = false};
  }
  Claim claim(GuardOptions o) { return Guard::create(store, std::move(o)).value().claim().value(); }
  std::vector<Tenure> tenures() {
    std::vector<Tenure> out;
    const auto entries = read_history(*store).value();
    for (const auto& e : entries) {
      EXPECT_TRUE(e.tenure) << e.key.str() << ": " << e.problem;
      if (e.tenure) out.push_back(*e.tenure);
    }
    return out;
  }
};

// The tenure's opening write is off the claim path: the upkeep after the
// claim writes it, so the claim itself costs no history write.
TEST_F(GuardHistory, AClaimOpensItsTenureAfterItIsGrantedAndItsStandDownClosesIt) {
  for (Mode mode : {Mode::announce, Mode::verify, Mode::exclusive}) {
    SCOPED_TRACE(std::string(to_string(mode)));
    const auto left = read_history(*store).value();
    for (const auto& e : left) (void)store->remove(e.key);
    const WallTime before = clock->wall();
    auto a = claim(options("a", mode));
    EXPECT_TRUE(tenures().empty()) << "written on the claim's path";
    scheduler->advance(0s);  // the upkeep after the claim
    auto open = tenures();
    ASSERT_EQ(open.size(), 1u);
    EXPECT_EQ(open[0].id, "a");
    EXPECT_EQ(open[0].host, "h1");
    EXPECT_EQ(open[0].pid, 100);
    EXPECT_EQ(open[0].mode, to_string(mode));
    EXPECT_EQ(open[0].epoch, a.epoch());
    EXPECT_EQ(open[0].started_at, a.record().started_at);
    EXPECT_GE(open[0].claimed_at, before);
    EXPECT_EQ(open[0].max_skew, Duration(3s));
    EXPECT_FALSE(open[0].ended_at);
    clock->advance(7s);
    ASSERT_TRUE(a.stand_down());
    auto closed = tenures();
    ASSERT_EQ(closed.size(), 1u);
    EXPECT_EQ(closed[0].end, "stood_down");
    EXPECT_EQ(closed[0].ended_at, clock->wall());
  }
}

// A claim that ends before its upkeep ran writes its tenure once, at the
// stand-down, opened and closed.
TEST_F(GuardHistory, AClaimEndedBeforeItsUpkeepWritesItsTenureOnceAtTheStandDown) {
  auto counted = make_counting_store(store);
  auto a = Guard::create(counted, options("a")).value().claim().value();
  clock->advance(2s);
  const auto before = counted->counts();
  ASSERT_TRUE(a.stand_down());
  const auto after = counted->counts();
  auto t = tenures();
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].end, "stood_down");
  EXPECT_EQ(*t[0].ended_at - t[0].claimed_at, Duration(2s));
  // exclusive on memory: the lease marked released and the record removed
  // (plus the unlock), the history listed, and one tenure write.
  EXPECT_EQ(after.writes() - before.writes(), 2u) << after.str();
}

TEST_F(GuardHistory, ALostClaimClosesItsTenureAsLostWithTheReason) {
  auto a = claim(options("a"));
  store->fail_on(Op::replace, Errc::unavailable,
                 [](const Key& k) { return !k.str().starts_with("history/"); });
  store->fail_on(Op::replace_if, Errc::unavailable);
  scheduler->advance(30s);  // renewals fail until the self-fencing deadline
  ASSERT_EQ(a.status(), ClaimStatus::lost);
  auto t = tenures();
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].end, "lost");
  EXPECT_NE(t[0].reason.find("no renewal succeeded"), std::string::npos) << t[0].reason;
  EXPECT_LE(*t[0].ended_at, clock->wall());
  EXPECT_GT(*t[0].ended_at, t[0].claimed_at);
}

TEST_F(GuardHistory, ASuccessorClosesADeadHoldersTenureAtItsLastRenewal) {
  std::optional<Claim> a = claim(options("a", Mode::verify));
  scheduler->advance(10s);  // one renewal
  const WallTime last_renewal = *a->record().renewed_at;
  // a's process dies: nothing more of it runs. Its scheduler is never
  // advanced again; b gets a scheduler of its own.
  scheduler = std::make_shared<ManualScheduler>(clock);
  clock->advance(60s);  // its record expired
  auto b = claim(options("b", Mode::verify));
  scheduler->advance(0s);  // the history's upkeep after b's claim
  auto t = tenures();
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].id, "a");
  EXPECT_EQ(t[0].end, "crashed");
  EXPECT_EQ(t[0].ended_at, last_renewal);
  EXPECT_NE(t[0].reason.find("found dead by b"), std::string::npos) << t[0].reason;
  EXPECT_FALSE(t[1].ended_at);
  EXPECT_TRUE(analyse_history(t, clock->wall()).clean());
}

TEST_F(GuardHistory, TheNewestTenuresAreKeptAndOlderOnesPruned) {
  for (int i = 0; i < 5; ++i) {
    auto o = options("x" + std::to_string(i));
    o.history_keep = 3;
    auto c = claim(std::move(o));
    clock->advance(1s);
    scheduler->advance(0s);
    ASSERT_TRUE(c.stand_down());
  }
  auto t = tenures();
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0].id, "x2");
  EXPECT_EQ(t[2].id, "x4");
  auto bad = options("y");
  bad.history_keep = 0;
  EXPECT_EQ(Guard::create(store, bad).error().code, Errc::invalid);
}

TEST_F(GuardHistory, WithoutHistoryNothingIsWritten) {
  auto o = options("a");
  o.history = false;
  auto a = claim(std::move(o));
  scheduler->advance(0s);
  ASSERT_TRUE(a.stand_down());
  EXPECT_TRUE(read_history(*store).value().empty());
}

TEST_F(GuardHistory, AFailingHistoryWriteNeverFailsTheClaimOrItsRenewals) {
  store->fail_on(Op::replace, Errc::unavailable,
                 [](const Key& k) { return k.str().starts_with("history/"); });
  store->fail_on(Op::list, Errc::unavailable,
                 [](const Key& k) { return k.str().starts_with("history"); });
  auto a = claim(options("a"));
  scheduler->advance(20s);  // the upkeep and two renewals
  EXPECT_EQ(a.status(), ClaimStatus::held);
  EXPECT_TRUE(logger->contains("could not write the claim's tenure to the history"));
  EXPECT_TRUE(logger->contains("could not list the history"));
  ASSERT_TRUE(a.stand_down());
  EXPECT_TRUE(logger->contains("could not write the end of the claim's tenure"));
}

TEST_F(GuardHistory, AnUnreadableTenureIsListedWithItsProblemAndNeverOverwritten) {
  const Key k = tenure_key("a", clock->wall()).value();
  ASSERT_TRUE(store->replace(k, "not json"));
  auto entries = read_history(*store).value();
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_FALSE(entries[0].tenure);
  EXPECT_NE(entries[0].problem.find("not a tenure document"), std::string::npos);
}

}  // namespace
}  // namespace instance
