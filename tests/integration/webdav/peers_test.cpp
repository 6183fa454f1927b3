// nginx (dav_ext), rclone serve webdav, sabre/dav and chezdav: what the
// store learns of each and how it adapts. nginx grants its lock zone's own timeout (here
// kNginxLockZone) whatever Timeout is asked; nginx and rclone ignore If-Match
// and If-None-Match, chezdav too; rclone and sabre/dav answer 404, not 409,
// to a PUT under a missing folder, chezdav 500. docs/webdav.md has the capability table these
// check.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <iostream>

#include "helpers.hpp"
#include "instance/guard.hpp"

namespace instance::testing {
namespace {

using std::chrono::seconds;

struct Expected {
  std::string name;
  bool conditional_writes;
  bool native_lease;
};

class Peer : public ::testing::TestWithParam<Expected> {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server().running()) << GetParam().name << " did not start";
    options_ = options_for(server());
    options_.logger = logger_;
  }
  WebDavServer& server() { return WebDavServer::named(GetParam().name); }
  std::shared_ptr<Store> store() { return make_store(options_); }

  WebDavStoreOptions options_;
  std::shared_ptr<CapturingLogger> logger_ = std::make_shared<CapturingLogger>();
};

TEST_P(Peer, TheProbeFindsWhatTheServerDoes) {
  const auto caps = store()->capabilities();
  EXPECT_EQ(caps.conditional_writes, GetParam().conditional_writes);
  EXPECT_EQ(caps.native_lease, GetParam().native_lease);
  EXPECT_EQ(caps.server_clock, GetParam().native_lease);
}

TEST_P(Peer, WritesInAFreshFolderCreateTheFolders) {
  auto s = store();
  ASSERT_TRUE(s->replace(key("a/b/c/doc"), "1")) << "replace";
  ASSERT_TRUE(s->create(key("x/y/doc"), "2")) << "create";
  auto doc = s->get(key("a/b/c/doc"));
  ASSERT_TRUE(doc) << doc.error().message;
  EXPECT_EQ(doc->data, "1");
}

TEST_P(Peer, VerifysSelfTestWorksInAFreshFolder) {
  auto guard = Guard::create(store(), {.ttl = seconds(30), .id = "v", .mode = Mode::verify});
  ASSERT_TRUE(guard) << guard.error().message;
  auto claim = guard->claim();
  ASSERT_TRUE(claim) << claim.error().error.message;
  EXPECT_TRUE(claim->stand_down());
}

TEST_P(Peer, TheLockGrantIsWhatTheServerSays) {
  auto s = store();
  if (!s->capabilities().native_lease) GTEST_SKIP() << "no native lease";
  const Key k = key("instances.lock");
  auto token = s->lock(k, seconds(120), "me");
  ASSERT_TRUE(token) << token.error().message;
  const Duration expected =
      GetParam().name == "nginx" ? Duration(kNginxLockZone) : Duration(seconds(120));
  EXPECT_EQ(token->granted, expected);
  auto kept = s->refresh_lock(k, token->token, seconds(90));
  ASSERT_TRUE(kept) << kept.error().message;
  EXPECT_EQ(*kept, GetParam().name == "nginx" ? Duration(kNginxLockZone) : Duration(seconds(90)));
  ASSERT_TRUE(s->unlock(k, token->token));
}

TEST_P(Peer, AStoreUnderAMissingFolderIsRefusedUnlessCreatePathIsGiven) {
  const std::string missing = WebDavServer::fresh_folder();
  options_.base_url = server().url() + "/" + missing + "/state";
  auto refused = store()->replace(key("instances/a"), "1");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Errc::invalid);
  EXPECT_NE(refused.error().message.find("/" + missing + "/ above the store"), std::string::npos)
      << refused.error().message;
  EXPECT_FALSE(std::filesystem::exists(server().root() / missing)) << "nothing was created";
  options_.create_path = true;
  ASSERT_TRUE(store()->replace(key("instances/a"), "1"));
  EXPECT_TRUE(std::filesystem::exists(server().root() / missing / "state" / "instances" / "a"));
}

TEST_P(Peer, AReadOnlyStoreNeitherProbesNorWrites) {
  const std::string folder = WebDavServer::fresh_folder();
  options_.base_url = server().url() + "/" + folder;
  options_.read_only = true;
  auto s = store();
  ASSERT_TRUE(s->capabilities().unknown);
  EXPECT_EQ(s->capabilities().unknown->code, Errc::unsupported);
  auto listed = s->list(key("instances"));
  ASSERT_TRUE(listed) << listed.error().message;
  EXPECT_TRUE(listed->empty());
  EXPECT_EQ(s->replace(key("instances/a"), "1").error().code, Errc::permission);
  EXPECT_FALSE(std::filesystem::exists(server().root() / folder)) << "nothing was created";
}

// The guard on nginx at the default ttl (2 min, max-skew 5 s): the 4 s lock
// zone is below 3 x max-skew, so the claim is refused with a clear message
// instead of renewing every 40 s on a lock that lapses after 4.
TEST(NginxGrant, AZoneTooShortForTheDefaultTtlIsRefusedAtTheStart) {
  auto& server = WebDavServer::nginx();
  ASSERT_TRUE(server.running());
  auto guard = Guard::create(make_store(options_for(server)), {.id = "a"});
  ASSERT_TRUE(guard) << guard.error().message;
  auto claim = guard->claim();
  ASSERT_FALSE(claim);
  EXPECT_EQ(claim.error().error.code, Errc::invalid);
  EXPECT_NE(claim.error().error.message.find("granted its lock for only 4s"), std::string::npos)
      << claim.error().error.message;
}

// With a ttl whose third (10 s) is longer than the zone, the claim renews
// every 4 s / 3 and self-fences at 4 s - max-skew.
TEST(NginxGrant, TheClaimRenewsOnTheZonesTimeout) {
  auto& server = WebDavServer::nginx();
  ASSERT_TRUE(server.running());
  auto guard = Guard::create(make_store(options_for(server)),
                             {.ttl = seconds(30), .id = "a", .max_skew = seconds(1)});
  ASSERT_TRUE(guard) << guard.error().message;
  auto claim = guard->claim();
  const MonoTime after = system_clock()->monotonic();
  ASSERT_TRUE(claim) << claim.error().error.message;
  ASSERT_TRUE(claim->fence_deadline().has_value());
  // Counted from before the claim's lock request: at most zone - max-skew.
  EXPECT_LE(*claim->fence_deadline(), after + Duration(kNginxLockZone) - seconds(1));
  EXPECT_TRUE(claim->stand_down());
}

// Measured: nginx's dav_ext leaves every name starting with '.' out of a
// PROPFIND listing (the file is there and reads back). A record whose
// escaped id starts with '.' is then invisible to verify's scan and to
// status on nginx (docs/webdav.md). Fails when nginx stops hiding them.
TEST(NginxListing, NginxHidesDotNamesFromListings) {
  auto& server = WebDavServer::nginx();
  ASSERT_TRUE(server.running());
  auto s = make_store(options_for(server));
  ASSERT_TRUE(s->replace(key("instances/.hidden"), "1"));
  ASSERT_TRUE(s->replace(key("instances/shown"), "2"));
  EXPECT_TRUE(s->get(key("instances/.hidden")));
  auto listed = s->list(key("instances"));
  ASSERT_TRUE(listed) << listed.error().message;
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ(listed->front().str(), "instances/shown");
}

// Measured: chezdav answers 500 to a PUT under a missing folder (and 404 to
// a PROPFIND of that folder). The store asks after the first 500, makes the
// folders and writes again: no retry of the 500. Before, the 500 was retried
// until the deadline (3 s here) and the write failed.
TEST(ChezdavFolders, APutUnderAMissingFolderIsAskedAboutNotRetried) {
  auto& server = WebDavServer::chezdav();
  ASSERT_TRUE(server.running());
  auto options = options_for(server);
  auto stats = std::make_shared<WebDavStats>();
  options.stats = stats;
  options.probe_capabilities = false;
  auto s = make_store(options);
  ASSERT_TRUE(s->replace(key("a/b/doc"), "1"));
  EXPECT_EQ(stats->retries.load(), 0u);
  // PUT (500), PROPFIND of a/b (404), MKCOL of the folder, a and a/b, the
  // PUT again, and a GET for the version (chezdav's PUT answer has no ETag).
  EXPECT_EQ(stats->requests.load(), 7u);
  std::cout << "[ measured ] chezdav: the first write in a fresh folder took "
            << stats->requests.load() << " requests, " << stats->retries.load() << " retries\n";
  EXPECT_EQ(s->get(key("a/b/doc"))->data, "1");
}

// Measured: chezdav puts file names into its PROPFIND hrefs without
// percent-encoding them, so a name holding '%' is listed decoded once: the
// record of id "a b" (file a%20b) is listed as "a b", whose GET finds
// nothing. Such records are invisible to verify's scan and to status on
// chezdav (docs/webdav.md). Fails when chezdav starts encoding its hrefs.
TEST(ChezdavListing, NamesHoldingPercentAreListedDecoded) {
  auto& server = WebDavServer::chezdav();
  ASSERT_TRUE(server.running());
  auto s = make_store(options_for(server));
  const Key spaced = Key::from_segments({"instances", "a b"}).value();
  ASSERT_EQ(spaced.str(), "instances/a%20b");
  ASSERT_TRUE(s->replace(spaced, "1"));
  ASSERT_TRUE(s->replace(key("instances/plain"), "2"));
  EXPECT_EQ(s->get(spaced)->data, "1");
  auto listed = s->list(key("instances"));
  ASSERT_TRUE(listed) << listed.error().message;
  std::vector<std::string> names;
  for (const auto& k : *listed) names.push_back(k.str());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"instances/a b", "instances/plain"}));
  for (const auto& k : *listed) {
    if (k.str() == "instances/a b") {
      EXPECT_EQ(s->get(k).error().code, Errc::not_found);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Servers, Peer,
                         ::testing::Values(Expected{"nginx", false, true},
                                           Expected{"rclone", false, true},
                                           Expected{"sabredav", true, true},
                                           Expected{"chezdav", false, true}),
                         [](const auto& param_info) { return param_info.param.name; });

}  // namespace
}  // namespace instance::testing
