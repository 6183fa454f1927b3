// N guards claiming at the same instant against real WebDAV servers, each on
// its own connection: at most one holder at any moment in verify, exclusive
// and auto; announce's double holders are counted and reported.
// Apache's If-Match and LOCK are both not atomic under concurrency (measured;
// see docs/webdav.md), so the store declares neither there: exclusive is
// refused on Apache and auto means verify. lighttpd's If-Match is atomic.
// nginx and rclone ignore If-Match but lock: exclusive runs on their locks
// (nginx's at its lock zone's own timeout, shorter than ttl/3 here). sabre/dav
// under php -S answers one request at a time: a few rounds only.
#include <gtest/gtest.h>

#include "helpers.hpp"
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
  const RaceReport r = run_race(store_for, mode, kGuards, c.rounds, c.ttl, c.max_skew);
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
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Modes, WebDavRace, ::testing::ValuesIn(cases()), [](const auto& p) {
  return p.param.server + "_" + std::string(to_string(p.param.mode));
});

}  // namespace
}  // namespace instance::testing
