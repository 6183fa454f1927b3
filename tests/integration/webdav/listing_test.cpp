// The PROPFIND reply parser, on hand-written replies (no server).
#include <gtest/gtest.h>

#include "listing.hpp"

namespace instance::webdav {
namespace {

const std::vector<std::string> kBase = {"dav", "spaces", "a$b", "state"};

std::string reply(std::string_view ns_decl, std::string_view prefix,
                  const std::vector<std::pair<std::string, bool>>& items) {
  const std::string p = prefix.empty() ? "" : std::string(prefix) + ":";
  std::string body = "<?xml version=\"1.0\"?><" + p + "multistatus " + std::string(ns_decl) + ">";
  for (const auto& [href, collection] : items) {
    body += "<" + p + "response><" + p + "href>" + href + "</" + p + "href><" + p + "propstat><" +
            p + "prop><" + p + "resourcetype>" + (collection ? "<" + p + "collection/>" : "") +
            "</" + p + "resourcetype><" + p + "getetag>\"e1\"</" + p + "getetag></" + p + "prop><" +
            p + "status>HTTP/1.1 200 OK</" + p + "status></" + p + "propstat></" + p + "response>";
  }
  return body + "</" + p + "multistatus>";
}

std::vector<std::string> joined(const std::vector<ListingEntry>& entries) {
  std::vector<std::string> out;
  for (const auto& e : entries) {
    std::string s;
    for (const auto& n : e.names) s += (s.empty() ? "" : "/") + n;
    out.push_back(s + (e.collection ? "/" : ""));
  }
  return out;
}

TEST(Listing, AnyPrefixBoundToDavIsAccepted) {
  for (auto [decl, prefix] :
       std::vector<std::pair<std::string, std::string>>{{"xmlns:D=\"DAV:\"", "D"},
                                                        {"xmlns:d=\"DAV:\"", "d"},
                                                        {"xmlns:lp1=\"DAV:\"", "lp1"},
                                                        {"xmlns=\"DAV:\"", ""}}) {
    auto entries = parse_multistatus(
        reply(decl, prefix,
              {{"/dav/spaces/a%24b/state/", true}, {"/dav/spaces/a%24b/state/x", false}}),
        kBase);
    ASSERT_TRUE(entries.has_value()) << prefix << ": " << entries.error().message;
    EXPECT_EQ(joined(*entries), (std::vector<std::string>{"/", "x"})) << prefix;
    EXPECT_EQ((*entries)[1].etag, "\"e1\"");
  }
}

TEST(Listing, ElementsOutsideTheDavNamespaceDoNotCount) {
  // OpenCloud's error bodies use xmlns:d="DAV" (no colon): not a multistatus.
  auto entries = parse_multistatus(reply("xmlns:d=\"DAV\"", "d", {{"/x", false}}), {});
  ASSERT_FALSE(entries.has_value());
  EXPECT_EQ(entries.error().code, Errc::malformed);
}

TEST(Listing, FullUrlsAndEncodedNamesAreDecoded) {
  auto entries =
      parse_multistatus(reply("xmlns:D=\"DAV:\"", "D",
                              {{"https://cloud.example/dav/spaces/a%24b/state/", true},
                               {"https://cloud.example/dav/spaces/a$b/state/instances/", true},
                               {"/dav/spaces/a%24b/state/x%252Fy", false},
                               {"/dav/spaces/a%24b/state/%252E%252E", false}}),
                        kBase);
  ASSERT_TRUE(entries.has_value()) << entries.error().message;
  EXPECT_EQ(joined(*entries), (std::vector<std::string>{"/", "instances/", "x%2Fy", "%2E%2E"}));
}

TEST(Listing, NamesThatAreNotCanonicalAreListedAsTheyAre) {
  // Every file under instances/ is a record to judge, whatever its name, as
  // the original guard judges it: a foreign name never fails the listing.
  auto entries = parse_multistatus(reply("xmlns:D=\"DAV:\"", "D",
                                         {{"/dav/spaces/a%24b/state/a%20b", false},
                                          {"/dav/spaces/a%24b/state/%2541", false},
                                          {"/dav/spaces/a%24b/state/%FF%FE", false},
                                          {"/dav/spaces/a%24b/state/x~y", false}}),
                                   kBase);
  ASSERT_TRUE(entries.has_value()) << entries.error().message;
  EXPECT_EQ(joined(*entries), (std::vector<std::string>{"a b", "%41", "\xFF\xFE", "x~y"}));
}

TEST(Listing, EntitiesAreNeverExpanded) {
  // A DOCTYPE's entities stay unexpanded (no entity bomb): "&b;" is a name.
  auto entries =
      parse_multistatus(R"(<!DOCTYPE d [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;">]>)"
                        R"(<D:multistatus xmlns:D="DAV:"><D:response><D:href>/s/&b;</D:href>)"
                        R"(</D:response></D:multistatus>)",
                        {"s"});
  ASSERT_TRUE(entries.has_value()) << entries.error().message;
  EXPECT_EQ(joined(*entries), (std::vector<std::string>{"&b;"}));
}

TEST(Listing, ItemsStillProcessingAreListed) {
  // OpenCloud answers a propstat "425 TOO EARLY" for an upload in progress.
  const std::string body =
      R"(<d:multistatus xmlns:d="DAV:"><d:response><d:href>/s/x</d:href><d:propstat><d:prop>)"
      R"(<d:resourcetype/><d:getetag>"e"</d:getetag></d:prop><d:status>HTTP/1.1 425 TOO EARLY)"
      R"(</d:status></d:propstat></d:response></d:multistatus>)";
  auto entries = parse_multistatus(body, {"s"});
  ASSERT_TRUE(entries.has_value()) << entries.error().message;
  EXPECT_EQ(joined(*entries), (std::vector<std::string>{"x"}));
  EXPECT_EQ((*entries)[0].etag, "");  // not from a 2xx propstat
}

struct Hostile {
  std::string name;
  std::string body;
};

class HostileListing : public ::testing::TestWithParam<Hostile> {};

TEST_P(HostileListing, IsMalformedNeverEmpty) {
  auto entries = parse_multistatus(GetParam().body, {"s"});
  ASSERT_FALSE(entries.has_value()) << GetParam().name;
  EXPECT_EQ(entries.error().code, Errc::malformed);
  EXPECT_FALSE(entries.error().message.empty());
  // Unprintable bytes never reach the message raw.
  for (unsigned char c : entries.error().message) EXPECT_TRUE(c >= 0x20 && c < 0x7F);
}

std::string one(std::string_view href) {
  return reply("xmlns:D=\"DAV:\"", "D", {{"/s/", true}, {std::string(href), false}});
}

INSTANTIATE_TEST_SUITE_P(
    Replies, HostileListing,
    ::testing::Values(
        Hostile{"not_xml", "this is not XML at all"},
        Hostile{"html", "<html><body>Login</body></html>"},
        Hostile{"json", R"({"multistatus": []})"}, Hostile{"empty", ""},
        Hostile{"truncated", R"(<D:multistatus xmlns:D="DAV:"><D:response><D:href>/s/)"},
        Hostile{"no_responses", R"(<D:multistatus xmlns:D="DAV:"></D:multistatus>)"},
        Hostile{"no_href", R"(<D:multistatus xmlns:D="DAV:"><D:response/></D:multistatus>)"},
        Hostile{"dotdot", one("/s/..")}, Hostile{"dotdot_encoded", one("/s/%2E%2E")},
        Hostile{"dot", one("/s/./x")}, Hostile{"encoded_slash", one("/s/a%2Fb")},
        Hostile{"encoded_slash_lower", one("/s/a%2fb")}, Hostile{"nul", one("/s/a%00b")},
        Hostile{"bad_escape", one("/s/a%G0")}, Hostile{"truncated_escape", one("/s/a%2")},
        Hostile{"outside_base", one("/other/x")}, Hostile{"base_prefix_only", one("/sx/y")},
        Hostile{"parent_of_base", one("/")}, Hostile{"relative", one("x")},
        Hostile{"query", one("/s/x?a=b")}, Hostile{"empty_segment", one("/s//x")}),
    [](const auto& param_info) { return param_info.param.name; });

}  // namespace
}  // namespace instance::webdav
