// The HTTP Date header and the server clock check (src/net/http_date.cpp).
#include "net/http_date.hpp"

#include <gtest/gtest.h>

namespace instance::net {
namespace {

using namespace std::chrono_literals;

// 2026-11-29 11:35:08 UTC, the moment "Sun, 29 Nov 2026 11:35:08 GMT" names.
const WallTime kDated =
    WallTime{std::chrono::sys_days{std::chrono::year{2026} / 11 / 29}} + 11h + 35min + 8s;
constexpr std::string_view kDate = "Sun, 29 Nov 2026 11:35:08 GMT";

TEST(HttpDate, ParsesImfFixdate) {
  const auto t = parse_http_date(kDate);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(*t, kDated);
  for (const char* bad : {"", "Sunday, 29-Nov-26 11:35:08 GMT", "Sun Nov 29 11:35:08 2026",
                          "Sun, 31 Feb 2026 11:35:08 GMT", "Sun, 29 Xyz 2026 11:35:08 GMT",
                          "Sun, 29 Nov 2026 25:35:08 GMT", "Sun, 29 Nov 2026 11:35:08 UTC"}) {
    EXPECT_FALSE(parse_http_date(bad).has_value()) << bad;
  }
}

TEST(HttpDate, ALocalTimeInsideTheHeadersSecondIsNoSkew) {
  // The server truncates to whole seconds: its clock read anything from
  // .000 to .999 of that second.
  EXPECT_EQ(http_date_skew(kDate, kDated), 0ns);
  EXPECT_EQ(http_date_skew(kDate, kDated + 999ms), 0ns);
  // Outside it, the distance to the nearer end of the second.
  EXPECT_EQ(http_date_skew(kDate, kDated + 1s), 0ns);
  EXPECT_EQ(http_date_skew(kDate, kDated + 1512ms), 512ms);
  EXPECT_EQ(http_date_skew(kDate, kDated - 600ms), 600ms);
  EXPECT_EQ(http_date_skew(kDate, kDated + 14s), 13s);
  EXPECT_FALSE(http_date_skew("yesterday", kDated).has_value());
}

TEST(HttpDate, TheCheckReportsTheFirstExcessOnly) {
  ServerDateCheck check;
  // 512 ms into the second after the header's: a loopback server whose
  // clock is ours, which the check warned about while it took the header
  // for the exact time.
  EXPECT_FALSE(check.first_excess(kDate, kDated + 512ms, 500ms).has_value());
  EXPECT_FALSE(check.first_excess("", kDated + 1h, 500ms).has_value());
  EXPECT_FALSE(check.first_excess("not a date", kDated + 1h, 500ms).has_value());
  EXPECT_EQ(check.first_excess(kDate, kDated - 2s, 500ms), 2s);
  EXPECT_FALSE(check.first_excess(kDate, kDated - 3s, 500ms).has_value());
}

}  // namespace
}  // namespace instance::net
