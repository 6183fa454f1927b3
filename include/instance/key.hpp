// Store keys built only from escaped segments.
//
// A key is a sequence of segments joined by '/'. Each segment is escaped so
// that it is always a safe file or URL path component:
//   * bytes in [A-Za-z0-9._-] stay as they are;
//   * every other byte becomes %XX with uppercase hex;
//   * the segments "." and ".." are escaped whole ("%2E", "%2E%2E");
//   * the empty segment is not allowed.
// Unescaping accepts only this canonical form, so every key has exactly one
// spelling and no key can name a parent folder, a hidden separator or a
// character a store would treat specially.
//
// Key is a value type; it is cheap to copy and thread-compatible.
#pragma once

#include <compare>
#include <string>
#include <string_view>
#include <vector>

#include "instance/error.hpp"
#include "instance/export.hpp"

namespace instance {

// Escapes one raw segment (any bytes, including '/', NUL and non-UTF-8).
// Returns an invalid error only for the empty segment.
INSTANCE_EXPORT Result<std::string> escape_segment(std::string_view raw);

// Reverses escape_segment; refuses any form escape_segment would not produce
// (lowercase hex, escaped safe bytes, bare "." or "..", '/', truncated %X).
INSTANCE_EXPORT Result<std::string> unescape_segment(std::string_view escaped);

// True when `escaped` is exactly what escape_segment produces for some input.
INSTANCE_EXPORT bool is_canonical_segment(std::string_view escaped) noexcept;

class INSTANCE_EXPORT Key {
 public:
  Key() = default;  // the root: no segments

  // Builds a key from raw segments, escaping each one.
  static Result<Key> from_segments(const std::vector<std::string>& raw_segments);

  // Parses the escaped form "a/b%2Fc"; every segment must be canonical.
  // The empty string parses to the root key.
  static Result<Key> parse(std::string_view escaped);

  // A key as a store listed it, to read or remove what is there: like parse,
  // but a segment may be any name a store holds, canonical or not ("a b",
  // "%41", "x~y"), as long as it is not empty, "." or "..", and has no '/'
  // or NUL (Errc::invalid otherwise). Every file a store holds is judged, so
  // a listing never fails over a name. Such a key names exactly that entry;
  // stores never write under a non-canonical key (record_key and friends
  // only build canonical ones).
  static Result<Key> from_listing(std::string_view path);

  // True when every segment is canonical (the keys parse accepts).
  bool canonical() const noexcept;

  // Appends one raw segment (escaped here).
  Result<Key> child(std::string_view raw_segment) const;

  const std::string& str() const noexcept { return escaped_; }
  bool empty() const noexcept { return escaped_.empty(); }
  std::vector<std::string> escaped_segments() const;
  // The unescaped last segment ("" for the root); a non-canonical one (from
  // from_listing) as it is.
  std::string leaf() const;

  // True when this key equals `prefix` or lies beneath it, by whole segments:
  // "a/b" is under "a/b" and "a", never under "a/bc" or "a/".
  bool is_under(const Key& prefix) const noexcept;

  friend auto operator<=>(const Key&, const Key&) = default;
  friend bool operator==(const Key&, const Key&) = default;

 private:
  explicit Key(std::string escaped) : escaped_(std::move(escaped)) {}
  std::string escaped_;
};

}  // namespace instance
