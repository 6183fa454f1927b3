// The HTTP Date header (RFC 9110 IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT").
//
// Pure function; thread-safe.
#pragma once

#include <optional>
#include <string_view>

#include "instance/clock.hpp"

namespace instance::webdav {

// nullopt for anything that is not an IMF-fixdate (the obsolete RFC 850 and
// asctime forms are not accepted: servers must not send them).
std::optional<WallTime> parse_http_date(std::string_view text);

}  // namespace instance::webdav
