// N guards claiming at the same instant against real WebDAV servers, each on
// its own connection: at most one holder at any moment in verify, exclusive
// and auto; announce's double holders are counted and reported.
// Apache's If-Match and LOCK are both not atomic under concurrency (measured;
// see docs/webdav.md), so the store declares neither there: exclusive is
// refused on Apache and auto means verify. lighttpd's If-Match is atomic.
#include <gtest/gtest.h>

#include "helpers.hpp"
#include "support/race.hpp"

namespace instance::testing {
namespace {

constexpr int kRounds = 200;
constexpr int kGuards = 3;

struct Case {
  std::string server;
  Mode mode;
};

class WebDavRace : public ::testing::TestWithParam<Case> {};

TEST_P(WebDavRace, AtMostOneHolderAtAnyMoment) {
  WebDavServer& server =
      GetParam().server == "apache" ? WebDavServer::apache() : WebDavServer::lighttpd();
  ASSERT_TRUE(server.running());
  const std::string folder = WebDavServer::fresh_folder();
  auto store_for = [&](int) { return make_store(options_for(server, folder)); };
  const Mode mode = GetParam().mode;
  if (mode == Mode::exclusive) {
    auto caps = store_for(0)->capabilities();
    if (!caps.native_lease && !caps.conditional_writes) {
      GTEST_SKIP() << GetParam().server
                   << " offers neither an atomic lock nor atomic conditional writes";
    }
  }
  const RaceReport r = run_race(store_for, mode, kGuards, kRounds);
  std::cout << "[ race ] store=" << GetParam().server << " mode=" << to_string(mode) << " guards=" << kGuards
            << " rounds=" << r.rounds << " rounds_with_holder=" << r.claims
            << " double_holder_rounds=" << r.double_holder_rounds
            << " max_holders=" << r.max_holders << " errors=" << r.errors << "\n";
  // Under this contention Apache now and then answers a GET of a record being
  // replaced with 403 Forbidden; the guard then refuses (safely) with a
  // permission error instead of naming the holder. Reported, not hidden.
  if (r.errors > 0) std::cout << "[ race ] errors, first: " << r.first_error << "\n";
  EXPECT_LT(r.errors, kRounds / 10) << r.first_error;
  if (mode == Mode::announce) {
    EXPECT_GT(r.claims, 0);
    return;
  }
  EXPECT_EQ(r.double_holder_rounds, 0);
  EXPECT_LE(r.max_holders, 1);
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (const char* server : {"apache", "lighttpd"}) {
    for (Mode m : {Mode::announce, Mode::verify, Mode::exclusive, Mode::automatic}) {
      out.push_back({server, m});
    }
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Modes, WebDavRace, ::testing::ValuesIn(cases()), [](const auto& p) {
  return p.param.server + "_" + std::string(to_string(p.param.mode));
});

}  // namespace
}  // namespace instance::testing
