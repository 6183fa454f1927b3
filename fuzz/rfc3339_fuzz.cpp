// RFC 3339: parse_rfc3339 on arbitrary text never crashes; a time that
// parses formats (UTC, Go's RFC3339Nano) to text that parses back to the same
// instant, and formatting that again gives the same text. The first 8 bytes
// also give an arbitrary int64 of nanoseconds since the epoch (1677..2262):
// every such instant round-trips.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "fuzz_check.hpp"
#include "instance/time.hpp"

using instance::fuzz::shown;

namespace {

void round_trip(instance::WallTime t, std::string_view origin) {
  const std::string text = instance::format_rfc3339(t);
  auto back = instance::parse_rfc3339(text);
  FUZZ_CHECK(back.has_value(), "format_rfc3339(" + std::to_string(t.time_since_epoch().count()) +
                                   "ns) = " + shown(text) + " does not parse (from " +
                                   shown(origin) + "): " + (back ? "" : back.error().message));
  FUZZ_CHECK(*back == t, "format/parse changed the instant " +
                             std::to_string(t.time_since_epoch().count()) + "ns into " +
                             std::to_string(back->time_since_epoch().count()) + "ns via " +
                             shown(text));
  FUZZ_CHECK(instance::format_rfc3339(*back) == text, "format is not stable for " + shown(text));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  if (auto t = instance::parse_rfc3339(input); t) round_trip(*t, input);
  if (size >= 8) {
    std::int64_t ns;
    std::memcpy(&ns, data, sizeof ns);
    round_trip(instance::WallTime{instance::Duration{ns}}, input.substr(0, 8));
  }
  return 0;
}
