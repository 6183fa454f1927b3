// Key escaping: escape_segment / unescape_segment / is_canonical_segment /
// Key::parse on arbitrary bytes. Invariants:
//   * escape_segment(raw) succeeds for every non-empty raw, is canonical and
//     unescapes back to raw; the empty segment is refused;
//   * unescape_segment(s) succeeds exactly when is_canonical_segment(s), and
//     then escape_segment(unescape_segment(s)) == s (one spelling per key);
//   * Key::parse(s) succeeds -> key.str() == s, every segment is canonical,
//     rebuilding from the unescaped segments gives the same key, leaf() is
//     the unescaped last segment, and the key is under each of its prefixes;
//   * Key::from_listing(s) accepts every key parse accepts, as the same key,
//     and whatever it accepts keeps s as its text and is canonical() exactly
//     when parse accepts it too.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_check.hpp"
#include "instance/key.hpp"

using instance::fuzz::shown;

namespace {

void check_raw(std::string_view raw) {
  auto escaped = instance::escape_segment(raw);
  if (raw.empty()) {
    FUZZ_CHECK(!escaped, "the empty segment was escaped");
    return;
  }
  FUZZ_CHECK(escaped.has_value(), "escape_segment refused " + shown(raw));
  FUZZ_CHECK(instance::is_canonical_segment(*escaped),
             "escape_segment(" + shown(raw) + ") = " + shown(*escaped) + " is not canonical");
  auto back = instance::unescape_segment(*escaped);
  FUZZ_CHECK(back.has_value() && *back == raw,
             "unescape(escape(" + shown(raw) + ")) != raw; escaped " + shown(*escaped));
}

void check_escaped(std::string_view s) {
  auto raw = instance::unescape_segment(s);
  const bool canonical = instance::is_canonical_segment(s);
  FUZZ_CHECK(raw.has_value() == canonical,
             "unescape_segment and is_canonical_segment disagree on " + shown(s));
  if (!raw) return;
  auto again = instance::escape_segment(*raw);
  FUZZ_CHECK(again.has_value() && *again == s,
             "escape(unescape(" + shown(s) + ")) = " + (again ? shown(*again) : "error"));
}

void check_listed(std::string_view s) {
  auto parsed = instance::Key::parse(s);
  auto listed = instance::Key::from_listing(s);
  FUZZ_CHECK(!parsed || (listed && *listed == *parsed),
             "from_listing refuses or changes the parsed key " + shown(s));
  if (!listed) return;
  FUZZ_CHECK(listed->str() == s, "from_listing(" + shown(s) + ").str() changed");
  FUZZ_CHECK(listed->canonical() == parsed.has_value(),
             "canonical() disagrees with parse on " + shown(s));
}

void check_key(std::string_view s) {
  check_listed(s);
  auto key = instance::Key::parse(s);
  if (!key) return;
  FUZZ_CHECK(key->str() == s, "Key::parse(" + shown(s) + ").str() = " + shown(key->str()));
  std::vector<std::string> raw_segments;
  for (const std::string& segment : key->escaped_segments()) {
    FUZZ_CHECK(instance::is_canonical_segment(segment),
               "segment " + shown(segment) + " of " + shown(s) + " is not canonical");
    auto raw = instance::unescape_segment(segment);
    FUZZ_CHECK(raw.has_value(), "segment " + shown(segment) + " does not unescape");
    raw_segments.push_back(std::move(*raw));
  }
  auto rebuilt = instance::Key::from_segments(raw_segments);
  FUZZ_CHECK(rebuilt.has_value() && *rebuilt == *key, "from_segments does not rebuild " + shown(s));
  FUZZ_CHECK(key->leaf() == (raw_segments.empty() ? std::string() : raw_segments.back()),
             "leaf() of " + shown(s));
  // Every prefix by whole segments contains the key; the root contains all.
  instance::Key prefix;
  FUZZ_CHECK(key->is_under(prefix), shown(s) + " is not under the root");
  for (const std::string& raw : raw_segments) {
    auto next = prefix.child(raw);
    FUZZ_CHECK(next.has_value(), "child(" + shown(raw) + ") refused");
    prefix = std::move(*next);
    FUZZ_CHECK(key->is_under(prefix), shown(s) + " is not under " + shown(prefix.str()));
  }
  FUZZ_CHECK(prefix == *key, "children rebuild a different key from " + shown(s));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  check_raw(input);
  check_escaped(input);
  check_key(input);
  return 0;
}
