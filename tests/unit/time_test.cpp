#include "instance/time.hpp"

#include <time.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "instance/clock.hpp"

namespace instance {
namespace {

using namespace std::chrono;
using namespace std::chrono_literals;

WallTime at(int y, unsigned mo, unsigned d, int h, int mi, int s, nanoseconds frac = 0ns) {
  return sys_days{year{y} / mo / d} + hours{h} + minutes{mi} + seconds{s} + frac;
}

Duration boottime() {
  timespec ts{};
  EXPECT_EQ(::clock_gettime(CLOCK_BOOTTIME, &ts), 0);
  return seconds(ts.tv_sec) + nanoseconds(ts.tv_nsec);
}

// The guard's deadlines count on CLOCK_BOOTTIME, which goes on through a
// suspend of the host, and so does the system clock's monotonic().
TEST(BootClock, ReadsClockBoottime) {
  const Duration before = boottime();
  const Duration read = BootClock::now().time_since_epoch();
  const Duration from_clock = system_clock()->monotonic().time_since_epoch();
  const Duration after = boottime();
  EXPECT_LE(before, read);
  EXPECT_LE(read, from_clock);
  EXPECT_LE(from_clock, after);
}

TEST(Rfc3339, FormatsLikeGoRfc3339Nano) {
  EXPECT_EQ(format_rfc3339(at(2026, 11, 29, 11, 47, 21, 858966496ns)),
            "2026-11-29T11:47:21.858966496Z");
  EXPECT_EQ(format_rfc3339(at(2026, 3, 1, 12, 0, 0)), "2026-03-01T12:00:00Z");
  EXPECT_EQ(format_rfc3339(at(2026, 3, 1, 12, 0, 0, 120ms)), "2026-03-01T12:00:00.12Z");
}

TEST(Rfc3339, ParsesWhatGoWrites) {
  EXPECT_EQ(parse_rfc3339("2026-03-01T12:00:00Z").value(), at(2026, 3, 1, 12, 0, 0));
  EXPECT_EQ(parse_rfc3339("2026-11-29T11:47:21.858966496Z").value(),
            at(2026, 11, 29, 11, 47, 21, 858966496ns));
}

TEST(Rfc3339, ParsesOffsetsAndFractionLengths) {
  EXPECT_EQ(parse_rfc3339("2026-03-01T12:00:00.123456789+02:00").value(),
            at(2026, 3, 1, 10, 0, 0, 123456789ns));
  EXPECT_EQ(parse_rfc3339("2026-03-01T00:30:00-01:30").value(), at(2026, 3, 1, 2, 0, 0));
  EXPECT_EQ(parse_rfc3339("2026-03-01T12:00:59.1Z").value(), at(2026, 3, 1, 12, 0, 59, 100ms));
  // Go keeps nine fractional digits and truncates the rest.
  EXPECT_EQ(parse_rfc3339("2026-03-01T12:00:00.1234567899999Z").value(),
            at(2026, 3, 1, 12, 0, 0, 123456789ns));
}

TEST(Rfc3339, RefusesWhatGoRefusesOrMightRefuse) {
  for (const char* bad : {"2026-03-01t12:00:00Z", "2026-03-01T12:00:00z",
                          "2016-12-31T23:59:60Z",       // leap second: Go refuses
                          "2026-03-01T12:00:00,5Z",     // comma: not in every Go release
                          "2026-03-01T1:00:00Z",        // one-digit hour: likewise
                          "2026-03-01T12:00:00+24:00",  // offset 24h: likewise
                          "2026-03-01T12:00:00+00:60"}) {
    EXPECT_FALSE(parse_rfc3339(bad).has_value()) << bad;
  }
}

TEST(Rfc3339, ParsesTheEdgesOfTheRepresentableRangeAndNothingBeyond) {
  EXPECT_EQ(parse_rfc3339("1677-09-21T00:12:43.145224192Z").value().time_since_epoch().count(),
            std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(parse_rfc3339("2262-04-11T23:47:16.854775807Z").value().time_since_epoch().count(),
            std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(format_rfc3339(WallTime{Duration{std::numeric_limits<std::int64_t>::min()}}),
            "1677-09-21T00:12:43.145224192Z");
  EXPECT_EQ(format_rfc3339(WallTime{Duration{std::numeric_limits<std::int64_t>::max()}}),
            "2262-04-11T23:47:16.854775807Z");
  EXPECT_FALSE(parse_rfc3339("1677-09-21T00:12:43.145224191Z").has_value());
  EXPECT_FALSE(parse_rfc3339("2262-04-11T23:47:16.854775808Z").has_value());
  EXPECT_FALSE(parse_rfc3339("2262-04-12T01:00:00+01:00").has_value());
}

TEST(Rfc3339, RoundTrips) {
  for (auto t : {at(1970, 1, 1, 0, 0, 0), at(2026, 2, 28, 23, 59, 59, 999999999ns),
                 at(2262, 4, 11, 1, 2, 3, 4ns)}) {
    EXPECT_EQ(parse_rfc3339(format_rfc3339(t)).value(), t);
  }
}

TEST(Rfc3339, RefusesWhatIsNotRfc3339) {
  for (const char* bad :
       {"", "2026-03-01", "2026-03-01T12:00:00", "2026-03-01 12:00:00Z", "2026-02-30T00:00:00Z",
        "2026-13-01T00:00:00Z", "2026-03-01T24:00:00Z", "2026-03-01T12:60:00Z",
        "2026-03-01T12:00:00.Z", "2026-03-01T12:00:00+0200", "2026-03-01T12:00:00Zjunk",
        "26-03-01T12:00:00Z", "2026-03-01T12:00:00+24:00", "9999-12-31T23:59:59Z",
        "1013-11-29T11:47:21Z", "0000-01-01T00:00:00Z"}) {
    auto t = parse_rfc3339(bad);
    EXPECT_FALSE(t.has_value()) << bad;
    if (!t) {
      EXPECT_EQ(t.error().code, Errc::malformed);
    }
  }
}

TEST(Duration, ParsesGoSyntax) {
  EXPECT_EQ(parse_duration("500ms").value(), 500ms);
  EXPECT_EQ(parse_duration("90s").value(), 90s);
  EXPECT_EQ(parse_duration("2m").value(), 2min);
  EXPECT_EQ(parse_duration("1h30m").value(), 90min);
  EXPECT_EQ(parse_duration("1.5h").value(), 90min);
  EXPECT_EQ(parse_duration("0").value(), 0s);
  EXPECT_EQ(parse_duration("-1m").value(), -60s);
  EXPECT_EQ(parse_duration("1us").value(), 1us);
  EXPECT_EQ(parse_duration("1\xC2\xB5s").value(), 1us);
  EXPECT_EQ(parse_duration("2h45m30.5s").value(), 2h + 45min + 30500ms);
  EXPECT_EQ(parse_duration(".5s").value(), 500ms);
  EXPECT_EQ(parse_duration("1.s").value(), 1s);
}

TEST(Duration, RefusesNonsense) {
  for (const char* bad : {"", "5", "s", "1x", "1.2.3s", "9999999999h", "--1s", "1s ", ".s"}) {
    auto d = parse_duration(bad);
    EXPECT_FALSE(d.has_value()) << bad;
    if (!d) {
      EXPECT_EQ(d.error().code, Errc::invalid);
    }
  }
}

TEST(Duration, AcceptsGosWholeRangeAndNothingBeyond) {
  constexpr auto kMin = std::numeric_limits<std::int64_t>::min();
  constexpr auto kMax = std::numeric_limits<std::int64_t>::max();
  // Go's ParseDuration reads the magnitude up to 2^63, so the most negative
  // duration parses back from its own String() (fuzz finding 2).
  EXPECT_EQ(format_duration(nanoseconds{kMin}), "-2562047h47m16.854775808s");
  EXPECT_EQ(parse_duration("-2562047h47m16.854775808s").value().count(), kMin);
  EXPECT_EQ(parse_duration("-9223372036854775808ns").value().count(), kMin);
  EXPECT_EQ(parse_duration(format_duration(nanoseconds{kMax})).value().count(), kMax);
  EXPECT_EQ(parse_duration("9223372036854775807ns").value().count(), kMax);
  for (const char* bad :
       {"9223372036854775808ns", "-9223372036854775809ns", "2562047h47m16.854775808s",
        "-2562047h47m16.854775809s", "-9223372036854775808ns1ns"}) {
    EXPECT_FALSE(parse_duration(bad).has_value()) << bad;
  }
}

TEST(Duration, FormatsLikeGo) {
  EXPECT_EQ(format_duration(2min), "2m0s");
  EXPECT_EQ(format_duration(1500ms), "1.5s");
  EXPECT_EQ(format_duration(250ms), "250ms");
  EXPECT_EQ(format_duration(0s), "0s");
  EXPECT_EQ(format_duration(90min + 1s), "1h30m1s");
  EXPECT_EQ(format_duration(-40s), "-40s");
  EXPECT_EQ(format_duration(1ns), "1ns");
}

}  // namespace
}  // namespace instance
