// WebDAV replies (src/stores/webdav/listing.hpp, an internal header):
// parse_multistatus on arbitrary bodies, under a base path chosen by the
// first byte, and parse_lock_discovery. Invariants:
//   * never crashes or throws;
//   * a listing that parses has entries whose names all form a key
//     (Key::from_listing: what the store turns into keys unchecked);
//   * a failure is Errc::malformed with a message of printable ASCII only
//     (the body is server-controlled and ends up in logs);
//   * a lock reply that parses names a non-empty, trimmed token, and the
//     wanted one when a token was asked for.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_check.hpp"
#include "instance/key.hpp"
#include "stores/webdav/listing.hpp"

using instance::fuzz::printable_ascii;
using instance::fuzz::shown;

namespace {

const std::vector<std::vector<std::string>> kBases = {
    {},
    {"dav"},
    {"remote.php", "dav", "files", "alice", "state"},
    {"dav", "spaces", "a$b!c", ".instance-guard"},
};

bool trimmed(std::string_view s) {
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  return !s.empty() && !space(s.front()) && !space(s.back());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const auto& base = kBases[data[0] % kBases.size()];
  const std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);

  auto entries = instance::webdav::parse_multistatus(body, base);
  if (entries) {
    FUZZ_CHECK(!entries->empty(), "an empty listing was accepted: " + shown(body));
    for (const auto& entry : *entries) {
      for (const std::string& name : entry.names) {
        FUZZ_CHECK(
            instance::Key::from_listing(name).has_value() && name.find('/') == std::string::npos,
            "listed name " + shown(name) + " cannot be a key segment; body " + shown(body));
      }
    }
  } else {
    FUZZ_CHECK(entries.error().code == instance::Errc::malformed,
               "error code " + shown(entries.error().message));
    FUZZ_CHECK(printable_ascii(entries.error().message),
               "unprintable message: " + shown(entries.error().message));
  }

  const std::string_view want = (data[0] & 0x80) ? "opaquelocktoken:fuzz-1" : "";
  auto lock = instance::webdav::parse_lock_discovery(body, want);
  if (lock) {
    FUZZ_CHECK(trimmed(lock->token) || (want.empty() && lock->token.empty()),
               "lock token " + shown(lock->token));
    FUZZ_CHECK(lock->owner.empty() || trimmed(lock->owner), "lock owner " + shown(lock->owner));
    // A lock without its token only when any lock will do (sabre/dav hides them).
    FUZZ_CHECK(want.empty() || lock->token == want,
               "asked for " + std::string(want) + ", got " + shown(lock->token));
  } else {
    // malformed, or not_found for a well-formed reply that names no lock.
    FUZZ_CHECK(lock.error().code == instance::Errc::malformed ||
                   lock.error().code == instance::Errc::not_found,
               "error code " + shown(lock.error().message));
    FUZZ_CHECK(printable_ascii(lock.error().message),
               "unprintable message: " + shown(lock.error().message));
  }
  return 0;
}
