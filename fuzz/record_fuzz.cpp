// decode_record on arbitrary bytes: never crashes or throws; a record that
// decodes re-encodes to bytes that decode to the same record, and encoding is
// canonical (encode(decode(encode(r))) == encode(r)).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "fuzz_check.hpp"
#include "instance/record.hpp"

using instance::fuzz::shown;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  auto record = instance::decode_record(input);
  if (!record) {
    FUZZ_CHECK(record.error().code == instance::Errc::malformed,
               "error code for input " + shown(input));
    return 0;
  }
  const std::string encoded = instance::encode_record(*record);
  auto again = instance::decode_record(encoded);
  FUZZ_CHECK(again.has_value(), "encoded record does not decode: " + shown(encoded) + " (from " +
                                    shown(input) + "): " + (again ? "" : again.error().message));
  FUZZ_CHECK(*again == *record,
             "round trip changed the record: " + shown(encoded) + " (from " + shown(input) + ")");
  FUZZ_CHECK(instance::encode_record(*again) == encoded,
             "encoding is not canonical: " + shown(encoded));
  return 0;
}
