#include "net/http_date.hpp"

#include <array>
#include <charconv>
#include <string>

#include "instance/sdk/timeouts.hpp"
#include "instance/time.hpp"

namespace instance::net {
namespace {

std::optional<int> number(std::string_view text, std::size_t width) {
  if (text.size() != width) return std::nullopt;
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace

std::optional<WallTime> parse_http_date(std::string_view text) {
  // "Sun, 06 Nov 1994 08:49:37 GMT" is exactly 29 bytes.
  if (text.size() != 29 || text.substr(3, 2) != ", " || text[7] != ' ' || text[11] != ' ' ||
      text[16] != ' ' || text[19] != ':' || text[22] != ':' || text.substr(25) != " GMT") {
    return std::nullopt;
  }
  static constexpr std::array<std::string_view, 12> kMonths = {
      "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  unsigned month = 0;
  for (unsigned i = 0; i < kMonths.size(); ++i) {
    if (text.substr(8, 3) == kMonths[i]) month = i + 1;
  }
  const auto day = number(text.substr(5, 2), 2);
  const auto year = number(text.substr(12, 4), 4);
  const auto hour = number(text.substr(17, 2), 2);
  const auto minute = number(text.substr(20, 2), 2);
  const auto second = number(text.substr(23, 2), 2);
  if (month == 0 || !day || !year || !hour || !minute || !second || *hour > 23 || *minute > 59 ||
      *second > 60) {
    return std::nullopt;
  }
  const std::chrono::year_month_day date{std::chrono::year{*year}, std::chrono::month{month},
                                         std::chrono::day{static_cast<unsigned>(*day)}};
  if (!date.ok()) return std::nullopt;
  return WallTime{std::chrono::sys_days{date}} + std::chrono::hours{*hour} +
         std::chrono::minutes{*minute} + std::chrono::seconds{*second};
}

std::optional<Duration> http_date_skew(std::string_view date, WallTime sent, WallTime received) {
  const auto server = parse_http_date(date);
  if (!server) return std::nullopt;
  if (received < sent) received = sent;
  const WallTime second_end = *server + std::chrono::seconds(1);
  // The server's second is wholly after our window: its clock is ahead.
  if (received < *server) return std::chrono::duration_cast<Duration>(*server - received);
  // Wholly before it: its clock is behind.
  if (sent >= second_end) return std::chrono::duration_cast<Duration>(sent - second_end);
  return Duration::zero();
}

std::optional<Duration> ServerDateCheck::first_excess(std::string_view date, WallTime sent,
                                                      WallTime received, Duration max_skew) {
  if (date.empty() || warned_.load(std::memory_order_relaxed)) return std::nullopt;
  const auto skew = http_date_skew(date, sent, received);
  if (!skew || *skew <= max_skew) return std::nullopt;
  if (warned_.exchange(true)) return std::nullopt;
  return skew;
}

void ServerDateCheck::check(std::string_view date, WallTime sent, Clock& clock,
                            const TunedTimeouts& timeouts, Logger& log, std::string_view warning,
                            std::string_view store) {
  if (date.empty() || warned_.load(std::memory_order_relaxed)) return;
  const auto max_skew = timeouts.get().max_clock_skew;
  if (!max_skew) return;
  const WallTime received = clock.wall();
  const auto skew = first_excess(date, sent, received, *max_skew);
  if (!skew) return;
  log.warn(warning, {{"store", std::string(store)},
                     {"server_date", std::string(date)},
                     {"sent_at", format_rfc3339(sent)},
                     {"received_at", format_rfc3339(received)},
                     {"skew", format_duration(*skew)},
                     {"max_skew", format_duration(*max_skew)}});
}

}  // namespace instance::net
