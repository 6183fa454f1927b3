#include "instance/time.hpp"

#include <charconv>
#include <cstdint>
#include <limits>

namespace instance {
namespace {

__extension__ using Wide = __int128;  // GCC and clang; ISO C++ has no 128-bit integer

using std::chrono::days;
using std::chrono::nanoseconds;

std::unexpected<Error> bad_time(std::string_view text, std::string_view why) {
  return fail(Errc::malformed, "\"" + std::string(text.substr(0, 64)) +
                                   "\" is not an RFC 3339 time (" + std::string(why) + ")");
}

// Reads exactly `n` decimal digits at `pos`.
bool digits(std::string_view s, std::size_t pos, std::size_t n, int& out) {
  if (pos + n > s.size()) return false;
  out = 0;
  for (std::size_t i = pos; i < pos + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    out = out * 10 + (s[i] - '0');
  }
  return true;
}

}  // namespace

std::string format_rfc3339(WallTime t) {
  // Day and time of day by integer division, which cannot overflow (chrono's
  // floor<days> does, on the first representable day, 1677-09-21).
  constexpr std::int64_t kDay = 86'400'000'000'000;
  const std::int64_t ns = t.time_since_epoch().count();
  std::int64_t day_count = ns / kDay;
  std::int64_t tod = ns % kDay;
  if (tod < 0) {
    tod += kDay;
    --day_count;
  }
  const std::chrono::year_month_day ymd{std::chrono::sys_days{days{day_count}}};
  const std::chrono::hh_mm_ss hms{nanoseconds{tod}};
  char buf[64];
  int n = std::snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02d:%02d:%02d", int(ymd.year()),
                        unsigned(ymd.month()), unsigned(ymd.day()), int(hms.hours().count()),
                        int(hms.minutes().count()), int(hms.seconds().count()));
  std::string out(buf, static_cast<std::size_t>(n));
  auto frac = hms.subseconds().count();
  if (frac != 0) {
    char fbuf[16];
    std::snprintf(fbuf, sizeof fbuf, ".%09lld", static_cast<long long>(frac));
    std::string f(fbuf);
    while (f.back() == '0') f.pop_back();
    out += f;
  }
  out += 'Z';
  return out;
}

Result<WallTime> parse_rfc3339(std::string_view s) {
  // The spelling every Go release's time.Parse(time.RFC3339, s) accepts (its
  // fast path, parseRFC3339 in Go's time/format_rfc3339.go), byte for byte;
  // docs/record-format.md lists what Go accepts beyond it and why we do not.
  int year, month, day, hour, minute, second;
  if (s.size() < 20 || !digits(s, 0, 4, year) || s[4] != '-' || !digits(s, 5, 2, month) ||
      s[7] != '-' || !digits(s, 8, 2, day)) {
    return bad_time(s, "expected YYYY-MM-DD");
  }
  if (s[10] != 'T') return bad_time(s, "expected an uppercase 'T' between date and time");
  if (!digits(s, 11, 2, hour) || s[13] != ':' || !digits(s, 14, 2, minute) || s[16] != ':' ||
      !digits(s, 17, 2, second)) {
    return bad_time(s, "expected hh:mm:ss");
  }
  const std::chrono::year_month_day ymd{std::chrono::year{year},
                                        std::chrono::month{static_cast<unsigned>(month)},
                                        std::chrono::day{static_cast<unsigned>(day)}};
  if (!ymd.ok()) return bad_time(s, "no such date");
  if (hour > 23 || minute > 59) return bad_time(s, "time out of range");
  if (second > 59) return bad_time(s, "second out of range (Go refuses leap seconds)");

  std::size_t pos = 19;
  std::int64_t frac_ns = 0;
  if (s[pos] == '.' && pos + 1 < s.size() && s[pos + 1] >= '0' && s[pos + 1] <= '9') {
    // Any number of digits; Go keeps the first nine (truncates, never rounds).
    ++pos;
    std::int64_t scale = 100'000'000;
    for (; pos < s.size() && s[pos] >= '0' && s[pos] <= '9'; ++pos) {
      frac_ns += (s[pos] - '0') * scale;
      scale /= 10;
    }
  }
  std::chrono::minutes offset{0};
  const std::string_view zone = s.substr(pos);
  if (zone != "Z") {
    int oh, om;
    if (zone.size() != 6 || (zone[0] != '+' && zone[0] != '-') || !digits(zone, 1, 2, oh) ||
        zone[3] != ':' || !digits(zone, 4, 2, om)) {
      return bad_time(s, "expected 'Z' or an offset +hh:mm at the end");
    }
    if (oh > 23 || om > 59) return bad_time(s, "offset out of range");
    offset = std::chrono::hours{oh} + std::chrono::minutes{om};
    if (zone[0] == '-') offset = -offset;
  }

  // WallTime counts nanoseconds in 64 bits (1677-09-21 to 2262-04-11): check
  // the range in 128 bits before converting, never overflow.
  const Wide seconds = Wide{std::chrono::sys_days{ymd}.time_since_epoch().count()} * 86400 +
                       hour * 3600 + minute * 60 + second - std::chrono::seconds{offset}.count();
  const Wide ns = seconds * 1'000'000'000 + frac_ns;
  if (ns < std::numeric_limits<std::int64_t>::min() ||
      ns > std::numeric_limits<std::int64_t>::max()) {
    return bad_time(s, "outside the representable range 1677-09-21 to 2262-04-11");
  }
  return WallTime{Duration{static_cast<std::int64_t>(ns)}};
}

Result<Duration> parse_duration(std::string_view text) {
  auto bad = [&](std::string_view why) {
    return fail(Errc::invalid, "\"" + std::string(text.substr(0, 64)) + "\" is not a duration (" +
                                   std::string(why) + "; examples: 500ms, 90s, 2m, 1h30m)");
  };
  std::string_view s = text;
  bool negative = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s == "0") return Duration{0};
  if (s.empty()) return bad("empty");
  // Go accumulates the magnitude in uint64 nanoseconds up to 2^63 (so that
  // "-2562047h47m16.854775808s", the most negative duration, parses) and
  // rejects more; a positive total must also fit int64.
  constexpr std::uint64_t kMax =
      static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  constexpr std::uint64_t kLimit = kMax + 1;
  std::uint64_t total = 0;
  while (!s.empty()) {
    std::uint64_t whole = 0;
    std::size_t n = 0;
    bool any = false;
    while (n < s.size() && s[n] >= '0' && s[n] <= '9') {
      if (whole > kLimit / 10) return bad("overflow");
      whole = whole * 10 + static_cast<std::uint64_t>(s[n] - '0');
      if (whole > kLimit) return bad("overflow");
      ++n;
      any = true;
    }
    // The fraction as Go computes it: digits as an integer over a power of
    // ten, digits past uint64 precision dropped, scaled in float64.
    std::uint64_t fraction = 0;
    double fraction_scale = 1;
    if (n < s.size() && s[n] == '.') {
      ++n;
      bool overflow = false;
      while (n < s.size() && s[n] >= '0' && s[n] <= '9') {
        if (!overflow && fraction <= (kMax - 9) / 10) {
          fraction = fraction * 10 + static_cast<std::uint64_t>(s[n] - '0');
          fraction_scale *= 10;
        } else {
          overflow = true;
        }
        ++n;
        any = true;
      }
    }
    if (!any) return bad("expected a number");
    s.remove_prefix(n);
    std::size_t u = 0;
    while (u < s.size() && !(s[u] >= '0' && s[u] <= '9') && s[u] != '.') ++u;
    const std::string_view unit = s.substr(0, u);
    s.remove_prefix(u);
    std::uint64_t scale;
    if (unit == "ns")
      scale = 1;
    else if (unit == "us" || unit == "\xC2\xB5s" || unit == "\xCE\xBCs")
      scale = 1'000;
    else if (unit == "ms")
      scale = 1'000'000;
    else if (unit == "s")
      scale = 1'000'000'000;
    else if (unit == "m")
      scale = 60'000'000'000;
    else if (unit == "h")
      scale = 3'600'000'000'000;
    else if (unit.empty())
      return bad("missing unit");
    else
      return bad("unknown unit \"" + std::string(unit) + "\"");
    if (whole > kLimit / scale) return bad("overflow");
    std::uint64_t value = whole * scale;
    if (fraction > 0) {
      value += static_cast<std::uint64_t>(static_cast<double>(fraction) *
                                          (static_cast<double>(scale) / fraction_scale));
      if (value > kLimit) return bad("overflow");
    }
    if (value > kLimit - total) return bad("overflow");
    total += value;
  }
  if (negative) {
    // -(2^63) is INT64_MIN; negate in unsigned arithmetic, then convert.
    return Duration{static_cast<std::int64_t>(~total + 1)};
  }
  if (total > kMax) return bad("overflow");
  return Duration{static_cast<std::int64_t>(total)};
}

std::string format_duration(Duration d) {
  // Go's Duration.String(): "1h2m3.5s", "1.5s", "250ms", "0s".
  std::int64_t ns = d.count();
  if (ns == 0) return "0s";
  std::string sign = ns < 0 ? "-" : "";
  std::uint64_t u =
      ns < 0 ? static_cast<std::uint64_t>(-(ns + 1)) + 1 : static_cast<std::uint64_t>(ns);
  auto fixed = [](std::uint64_t v, std::uint64_t unit) {
    std::string out = std::to_string(v / unit);
    std::uint64_t rem = v % unit;
    if (rem != 0) {
      std::string digits_str = std::to_string(rem + unit).substr(1);  // zero-padded
      while (digits_str.back() == '0') digits_str.pop_back();
      out += "." + digits_str;
    }
    return out;
  };
  if (u < 1'000) return sign + std::to_string(u) + "ns";
  if (u < 1'000'000) return sign + fixed(u, 1'000) + "\xC2\xB5s";
  if (u < 1'000'000'000) return sign + fixed(u, 1'000'000) + "ms";
  std::string out = sign;
  const std::uint64_t hours = u / 3'600'000'000'000;
  u %= 3'600'000'000'000;
  const std::uint64_t minutes = u / 60'000'000'000;
  u %= 60'000'000'000;
  if (hours > 0) out += std::to_string(hours) + "h";
  if (hours > 0 || minutes > 0) out += std::to_string(minutes) + "m";
  return out + fixed(u, 1'000'000'000) + "s";
}

}  // namespace instance
