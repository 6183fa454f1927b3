// Text forms of time: RFC 3339 timestamps (records) and Go durations (flags).
#pragma once

#include <string>
#include <string_view>

#include "instance/clock.hpp"
#include "instance/error.hpp"
#include "instance/export.hpp"

namespace instance {

// Formats as Go's time.RFC3339Nano in UTC: "2026-11-29T11:47:21.858966496Z",
// fractional seconds with trailing zeros dropped (none when whole).
INSTANCE_EXPORT std::string format_rfc3339(WallTime t);

// Parses an RFC 3339 date-time in the spelling every Go release accepts
// (docs/record-format.md): "YYYY-MM-DDThh:mm:ss", an optional '.' and one or
// more fractional digits (the first nine kept, the rest truncated as Go
// does), then 'Z' or an offset "+hh:mm" / "-hh:mm" (hours 00-23, minutes
// 00-59). Uppercase 'T' and 'Z' only; no leap second (:60), no ',' before
// the fraction, no one-digit hour; the instant must fit WallTime (1677-09-21
// to 2262-04-11). Errc::malformed otherwise: a record whose time Go might
// refuse must count as unreadable, never as expired.
INSTANCE_EXPORT Result<WallTime> parse_rfc3339(std::string_view text);

// Parses Go's duration syntax: "300ms", "1.5h", "2h45m", "0". Units ns, us,
// µs, ms, s, m, h. A sign is accepted; overflow is an error.
INSTANCE_EXPORT Result<Duration> parse_duration(std::string_view text);

// Formats like Go's Duration.String(): "2m0s", "1.5s", "250ms".
INSTANCE_EXPORT std::string format_duration(Duration d);

}  // namespace instance
