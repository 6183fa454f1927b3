#include "instance/key.hpp"

#include <gtest/gtest.h>

namespace instance {
namespace {

TEST(EscapeSegment, KeepsSafeBytes) { EXPECT_EQ(escape_segment("Az09._-").value(), "Az09._-"); }

TEST(EscapeSegment, EscapesEverythingElseAsUppercaseHex) {
  EXPECT_EQ(escape_segment("a b").value(), "a%20b");
  EXPECT_EQ(escape_segment("a/b").value(), "a%2Fb");
  EXPECT_EQ(escape_segment("%").value(), "%25");
  EXPECT_EQ(escape_segment("~").value(), "%7E");
  EXPECT_EQ(escape_segment(std::string("\0x", 2)).value(), "%00x");
  EXPECT_EQ(escape_segment("\xff\xfe").value(), "%FF%FE");  // not UTF-8
  EXPECT_EQ(escape_segment("é").value(), "%C3%A9");
}

TEST(EscapeSegment, EscapesDotSegmentsWhole) {
  EXPECT_EQ(escape_segment(".").value(), "%2E");
  EXPECT_EQ(escape_segment("..").value(), "%2E%2E");
  EXPECT_EQ(escape_segment("...").value(), "...");
  EXPECT_EQ(escape_segment(".hidden").value(), ".hidden");
}

TEST(EscapeSegment, RefusesEmpty) { EXPECT_EQ(escape_segment("").error().code, Errc::invalid); }

TEST(UnescapeSegment, RoundTripsEveryByte) {
  for (int b = 0; b < 256; ++b) {
    const std::string raw(1, static_cast<char>(b));
    const auto escaped = escape_segment(raw).value();
    EXPECT_TRUE(is_canonical_segment(escaped)) << escaped;
    EXPECT_EQ(unescape_segment(escaped).value(), raw) << b;
  }
  for (const std::string raw : {".", "..", "a/b/../c", "x y%z", "\xc3\x28", "instances"}) {
    EXPECT_EQ(unescape_segment(escape_segment(raw).value()).value(), raw);
  }
}

TEST(UnescapeSegment, RefusesNonCanonicalForms) {
  for (const char* bad : {"", ".", "..", "a%2fb", "%41", "a%2", "%", "a/b", "a b", "%2E.", ".%2E",
                          "a%2Eb", "%2e", "%G0", "~", "%2E%2E%2E", "\xff"}) {
    EXPECT_FALSE(unescape_segment(bad).has_value()) << bad;
    EXPECT_FALSE(is_canonical_segment(bad)) << bad;
  }
}

TEST(Key, ParseAcceptsOnlyCanonicalSegments) {
  EXPECT_EQ(Key::parse("instances/abc").value().str(), "instances/abc");
  EXPECT_TRUE(Key::parse("").value().empty());
  EXPECT_FALSE(Key::parse("a//b").has_value());
  EXPECT_FALSE(Key::parse("/a").has_value());
  EXPECT_FALSE(Key::parse("a/").has_value());
  EXPECT_FALSE(Key::parse("a/../b").has_value());
  EXPECT_FALSE(Key::parse("a/%2f").has_value());
}

TEST(Key, FromListingKeepsAnyNameAStoreHolds) {
  // Every file under instances/ is judged, whatever its name.
  for (const std::string name : {"a b", "%41", "a%2f", "x~y", "new\nline\xff", "%"}) {
    const auto key = Key::from_listing("instances/" + name);
    ASSERT_TRUE(key.has_value()) << name;
    EXPECT_EQ(key->str(), "instances/" + name);
    EXPECT_FALSE(key->canonical()) << name;
    EXPECT_EQ(key->leaf(), name);  // not canonical: the name as it is
    EXPECT_TRUE(key->is_under(Key::parse("instances").value()));
  }
  const auto canonical = Key::from_listing("instances/a%20b").value();
  EXPECT_TRUE(canonical.canonical());
  EXPECT_EQ(canonical, Key::parse("instances/a%20b").value());
  EXPECT_EQ(canonical.leaf(), "a b");
  for (const char* bad : {"a//b", "/a", "a/", "a/../b", "./a"}) {
    EXPECT_FALSE(Key::from_listing(bad).has_value()) << bad;
  }
  EXPECT_FALSE(Key::from_listing(std::string_view("a\0b", 3)).has_value());
}

TEST(Key, FromSegmentsEscapesEach) {
  const auto key = Key::from_segments({"instances", "pod/1", ".."}).value();
  EXPECT_EQ(key.str(), "instances/pod%2F1/%2E%2E");
  EXPECT_EQ(key.leaf(), "..");
  EXPECT_EQ(key.escaped_segments(), (std::vector<std::string>{"instances", "pod%2F1", "%2E%2E"}));
}

TEST(Key, IsUnderMatchesWholeSegments) {
  const auto abc = Key::parse("a/b/c").value();
  EXPECT_TRUE(abc.is_under(Key::parse("a/b").value()));
  EXPECT_TRUE(abc.is_under(Key::parse("a").value()));
  EXPECT_TRUE(abc.is_under(abc));
  EXPECT_TRUE(abc.is_under(Key{}));
  EXPECT_FALSE(Key::parse("a/bc").value().is_under(Key::parse("a/b").value()));
  EXPECT_FALSE(Key::parse("a").value().is_under(Key::parse("a/b").value()));
}

}  // namespace
}  // namespace instance
