// Go durations: parse_duration on arbitrary text never crashes; what parses
// formats (format_duration, Go's Duration.String) to text that parses back to
// the same duration. The first 8 bytes also give an arbitrary int64 of
// nanoseconds: every duration formats to text that parses back to it.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "fuzz_check.hpp"
#include "instance/time.hpp"

using instance::fuzz::shown;

namespace {

void round_trip(instance::Duration d, std::string_view origin) {
  const std::string text = instance::format_duration(d);
  auto back = instance::parse_duration(text);
  FUZZ_CHECK(back.has_value(), "format_duration(" + std::to_string(d.count()) +
                                   "ns) = " + shown(text) + " does not parse (from " +
                                   shown(origin) + "): " + (back ? "" : back.error().message));
  FUZZ_CHECK(*back == d, "format/parse changed " + std::to_string(d.count()) + "ns into " +
                             std::to_string(back->count()) + "ns via " + shown(text));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  if (auto d = instance::parse_duration(input); d) round_trip(*d, input);
  if (size >= 8) {
    std::int64_t ns;
    std::memcpy(&ns, data, sizeof ns);
    round_trip(instance::Duration{ns}, input.substr(0, 8));
  }
  return 0;
}
