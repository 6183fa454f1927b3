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
#include "instance/store.hpp"  // TunedTimeouts

namespace instance::net {

// nullopt for anything that is not an IMF-fixdate (the obsolete RFC 850 and
// asctime forms are not accepted: servers must not send them).
std::optional<WallTime> parse_http_date(std::string_view text);

// How far `local` lies from the moment a Date header stands for. The header
// has whole seconds (servers truncate), so the server's clock read somewhere
// in [date, date + 1 s): a local time inside that second is no skew at all,
// and outside it the distance is to the nearer end. nullopt when `date` is
// not an IMF-fixdate.
std::optional<Duration> http_date_skew(std::string_view date, WallTime local);

// Warns once per store: the first Date header further than `max_skew` from
// the local clock returns its skew; every later call returns nullopt.
class ServerDateCheck {
 public:
  std::optional<Duration> first_excess(std::string_view date, WallTime local, Duration max_skew);

  // first_excess against `clock` and the threshold `timeouts` holds now (a
  // store that checks no clock has none), and when it returns a skew,
  // `warning` logged at warn with the store, the server's Date, the local
  // time, the skew and max_skew. Once warned, it reads neither.
  void check(std::string_view date, Clock& clock, const TunedTimeouts& timeouts, Logger& log,
             std::string_view warning, std::string_view store);

 private:
  std::atomic<bool> warned_{false};
};

}  // namespace instance::net
