// The HTTP Date header (RFC 9110 IMF-fixdate: "Sun, 06 Nov 1994 08:49:37
// GMT") and the server clock check the HTTP stores (WebDAV, etcd's gateway,
// the CS3 data gateway) make with it.
//
// parse_http_date and http_date_skew are pure; ServerDateCheck is
// thread-safe.
#pragma once

#include <atomic>
#include <optional>
#include <string_view>

#include "instance/clock.hpp"
#include "instance/logger.hpp"
#include "instance/sdk/timeouts.hpp"
#include "instance/store.hpp"  // TunedTimeouts

namespace instance::net {

// nullopt for anything that is not an IMF-fixdate (the obsolete RFC 850 and
// asctime forms are not accepted: servers must not send them).
std::optional<WallTime> parse_http_date(std::string_view text);

// How far the server's clock lies from ours, judged by one reply: the
// server read its clock (the Date header) at some moment between `sent` (our
// clock just before the request went out) and `received` (just after the
// reply came in), and the header has whole seconds (servers truncate), so
// its clock read somewhere in [date, date + 1 s). When the two windows
// overlap there is no skew at all (a slow reply is not a skew); otherwise
// the skew is the gap between them. nullopt when `date` is not an
// IMF-fixdate. `received` before `sent` is taken as `sent`.
std::optional<Duration> http_date_skew(std::string_view date, WallTime sent, WallTime received);

// Warns once per store: the first Date header further than `max_skew` from
// the local clock returns its skew; every later call returns nullopt.
class ServerDateCheck {
 public:
  std::optional<Duration> first_excess(std::string_view date, WallTime sent, WallTime received,
                                       Duration max_skew);

  // first_excess of a reply to a request sent at `sent` (read from `clock`
  // before sending) and received now on `clock`, against the threshold
  // `timeouts` holds now (a store that checks no clock has none); when it
  // returns a skew, `warning` is logged at warn with the store, the server's
  // Date, our send and receive times, the skew and max_skew. Once warned, it
  // reads neither the clock nor the threshold.
  void check(std::string_view date, WallTime sent, Clock& clock, const TunedTimeouts& timeouts,
             Logger& log, std::string_view warning, std::string_view store);

 private:
  std::atomic<bool> warned_{false};
};

}  // namespace instance::net
