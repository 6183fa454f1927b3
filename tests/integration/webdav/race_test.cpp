// N guards claiming at the same instant against real WebDAV servers, each on
// its own connection: at most one holder at any moment in verify, exclusive
// and auto; announce's double holders are counted and reported.
// Apache's If-Match and LOCK are both not atomic under concurrency (measured;
// see docs/webdav.md), so the store declares neither there: exclusive is
// refused on Apache and auto means verify. lighttpd's If-Match is atomic.
// nginx and rclone ignore If-Match but lock: exclusive runs on their locks
// (nginx's at its lock zone's own timeout, shorter than ttl/3 here). sabre/dav
// under php -S answers one request at a time: a few rounds only. chezdav
// ignores If-Match and never expires a lock. On chezdav and on sabre/dav
// with its stock 1800 s locks, the `stale` cases begin every round with a
// crashed holder: a guard whose clock runs two ttls behind took the lock
// and never renews it, so its lease has long expired to the racers, who
// must end its lock, exactly one of them winning.
#include <gtest/gtest.h>

#include <algorithm>

#include "helpers.hpp"
#include "instance/testing.hpp"
#include "support/race.hpp"

namespace instance::testing {
namespace {

constexpr int kGuards = 3;

struct Case {
  std::string server;
  Mode mode;
  int rounds = 200;
  Duration ttl = std::chrono::minutes(1);
  std::optional<Duration> max_skew;  // unset: the guard's default
  bool stale = false;                // every round starts with a crashed holder
};

// A holder that took the store's lock and stopped renewing before anyone
// else could: its clock runs two ttls behind the racers', so its lease and
// record have expired to them. Woken at the end of the round, it finds its
// lock ended and loses its claim.
class CrashedHolder {
 public:
  CrashedHolder(std::shared_ptr<Store> store, Duration ttl) : store_(std::move(store)), ttl_(ttl) {}
  ~CrashedHolder() { wake(); }
  // Claims, or returns why not.
  std::optional<std::string> crash() {
    clock_->set_wall(std::chrono::time_point_cast<Duration>(std::chrono::system_clock::now()) -
                     2 * ttl_);
    auto guard = Guard::create(store_, {.ttl = ttl_,
                                        .id = "crashed",
                                        .clock = clock_,
                                        .scheduler = scheduler_,
                                        .mode = Mode::exclusive,
                                        .on_lost = [this](const Error&) { ++lost_; }});
    auto claim = guard->claim();
    if (!claim) return claim.error().error.message;
    claim_.emplace(std::move(*claim));
    return std::nullopt;
  }
  // Runs its overdue renewal and fence, then drops the claim.
  void wake() {
    if (!claim_) return;
    scheduler_->advance(ttl_);
    claim_.reset();
  }
  int lost() const { return lost_; }

 private:
  std::shared_ptr<Store> store_;
  Duration ttl_;
  std::shared_ptr<FakeClock> clock_ = std::make_shared<FakeClock>();
  std::shared_ptr<ManualScheduler> scheduler_ = std::make_shared<ManualScheduler>(clock_);
  std::optional<Claim> claim_;
  int lost_ = 0;
};

class WebDavRace : public ::testing::TestWithParam<Case> {};

TEST_P(WebDavRace, AtMostOneHolderAtAnyMoment) {
  const Case& c = GetParam();
  WebDavServer& server = WebDavServer::named(c.server);
  ASSERT_TRUE(server.running());
  const std::string folder = WebDavServer::fresh_folder();
  auto store_for = [&](int) { return make_store(options_for(server, folder)); };
  const Mode mode = c.mode;
  const Capabilities caps = store_for(0)->capabilities();
  if (mode == Mode::exclusive && !caps.native_lease && !caps.conditional_writes) {
    GTEST_SKIP() << c.server << " offers neither an atomic lock nor atomic conditional writes";
  }
  std::optional<CrashedHolder> crashed;
  int crashes = 0;
  std::string crash_error;
  std::function<void(int)> before_round;
  if (c.stale) {
    crashed.emplace(store_for(-1), c.ttl);
    before_round = [&](int) {
      crashed->wake();
      if (auto why = crashed->crash()) {
        crash_error = *why;
      } else {
        ++crashes;
      }
    };
  }
  const RaceReport r =
      run_race(store_for, mode, kGuards, c.rounds, c.ttl, c.max_skew, before_round);
  if (crashed) {
    crashed->wake();
    std::cout << "[ race ] stale rounds: " << crashes << " crashed holders, " << crashed->lost()
              << " of them found their lock ended\n";
    EXPECT_EQ(crashes, c.rounds) << crash_error;
    EXPECT_EQ(crashed->lost(), crashes) << "each crashed holder's lock was ended";
  }
  std::cout << "[ race ] store=" << c.server << " mode=" << to_string(mode) << " guards=" << kGuards
            << " rounds=" << r.rounds << " rounds_with_holder=" << r.claims
            << " double_holder_rounds=" << r.double_holder_rounds
            << " max_holders=" << r.max_holders << " errors=" << r.errors << "; "
            << r.holders_per_round() << "\n";
  if (r.errors > 0) std::cout << "[ race ] errors, first: " << r.first_error << "\n";
  EXPECT_LT(r.errors, std::max(1, c.rounds / 10)) << r.first_error;
  if (mode == Mode::announce) {
    EXPECT_GT(r.claims, 0);
    return;
  }
  EXPECT_EQ(r.double_holder_rounds, 0);
  EXPECT_LE(r.max_holders, 1);
  if (mode == Mode::verify ||
      ((mode == Mode::exclusive || mode == Mode::automatic) && caps.native_lease)) {
    // One LOCK wins every round, and verify's contenders back off and retry
    // until one gets through: someone holds in (nearly) every round.
    EXPECT_GE(r.claims * 100, r.rounds * 95) << r.holders_per_round();
  }
}

std::vector<Case> cases() {
  using std::chrono::seconds;
  std::vector<Case> out;
  const Mode modes[] = {Mode::announce, Mode::verify, Mode::exclusive, Mode::automatic};
  for (const char* server : {"apache", "lighttpd"}) {
    for (Mode m : modes) out.push_back({server, m});
  }
  for (Mode m : modes) {
    // ttl/3 = 10 s is longer than nginx's 4 s lock zone: the guard must renew
    // on the grant. max-skew 1 s lets a 4 s grant pass (it must be 3 s).
    out.push_back({"nginx", m, 100, seconds(30), seconds(1)});
    out.push_back({"rclone", m, 50});
    out.push_back({"sabredav", m, 15});
    out.push_back({"chezdav", m, 50});
  }
  for (Mode m : {Mode::exclusive, Mode::automatic}) {
    out.push_back({.server = "chezdav", .mode = m, .rounds = 50, .stale = true});
    out.push_back({.server = "sabredav-stock", .mode = m, .rounds = 10, .stale = true});
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Modes, WebDavRace, ::testing::ValuesIn(cases()), [](const auto& p) {
  std::string name = p.param.server + "_" + std::string(to_string(p.param.mode));
  if (p.param.stale) name += "_stale";
  std::ranges::replace(name, '-', '_');
  return name;
});

}  // namespace
}  // namespace instance::testing
