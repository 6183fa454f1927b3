#include "instance/key.hpp"

#include <algorithm>

#include "instance/sdk/credentials.hpp"

namespace instance {
namespace {

bool is_safe(unsigned char c) noexcept {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

int hex_value(char c) noexcept {  // uppercase only: the canonical form
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

Result<std::string> escape_segment(std::string_view raw) {
  if (raw.empty()) return fail(Errc::invalid, "a key segment must not be empty");
  if (raw == ".") return std::string("%2E");
  if (raw == "..") return std::string("%2E%2E");
  return percent_encode(raw, "._-");  // is_safe's set
}

Result<std::string> unescape_segment(std::string_view escaped) {
  auto refuse = [&](std::string_view why) {
    return fail(Errc::invalid,
                "key segment is not in canonical escaped form (" + std::string(why) + ")");
  };
  if (escaped.empty()) return refuse("empty");
  if (escaped == "." || escaped == "..") return refuse("bare dot segment");
  std::string out;
  out.reserve(escaped.size());
  for (std::size_t i = 0; i < escaped.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(escaped[i]);
    if (is_safe(c)) {
      out.push_back(static_cast<char>(c));
      continue;
    }
    if (c != '%') return refuse("byte that must be escaped");
    if (i + 2 >= escaped.size()) return refuse("truncated escape");
    const int hi = hex_value(escaped[i + 1]);
    const int lo = hex_value(escaped[i + 2]);
    if (hi < 0 || lo < 0) return refuse("escape is not two uppercase hex digits");
    out.push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  // Exactly one spelling per segment: escaping the result must give back the
  // input (refuses "%41" for "A", "%2E" inside a longer segment, ...).
  if (escape_segment(out).value_or(std::string{}) != escaped) {
    return refuse("an escape that is not needed, or a dot segment not escaped whole");
  }
  return out;
}

bool is_canonical_segment(std::string_view escaped) noexcept {
  auto raw = unescape_segment(escaped);
  return raw.has_value();
}

Result<Key> Key::from_segments(const std::vector<std::string>& raw_segments) {
  Key key;
  for (const auto& raw : raw_segments) {
    auto next = key.child(raw);
    if (!next) return std::unexpected(next.error());
    key = std::move(*next);
  }
  return key;
}

Result<Key> Key::parse(std::string_view escaped) {
  if (escaped.empty()) return Key{};
  std::size_t start = 0;
  while (true) {
    const std::size_t slash = escaped.find('/', start);
    const auto segment =
        escaped.substr(start, slash == std::string_view::npos ? escaped.npos : slash - start);
    if (auto raw = unescape_segment(segment); !raw) {
      return fail(Errc::invalid,
                  "invalid key \"" + std::string(escaped) + "\": " + raw.error().message);
    }
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return Key(std::string(escaped));
}

Result<Key> Key::from_listing(std::string_view path) {
  if (path.empty()) return Key{};
  for (std::size_t start = 0;;) {
    const std::size_t slash = path.find('/', start);
    const auto segment =
        path.substr(start, slash == std::string_view::npos ? path.npos : slash - start);
    if (segment.empty() || segment == "." || segment == ".." ||
        segment.find('\0') != std::string_view::npos) {
      return fail(Errc::invalid,
                  "a listed name cannot be a key: empty, a dot segment or a NUL "
                  "byte in a segment");
    }
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return Key(std::string(path));
}

bool Key::canonical() const noexcept {
  return std::ranges::all_of(escaped_segments(), is_canonical_segment);
}

Result<Key> Key::child(std::string_view raw_segment) const {
  auto escaped = escape_segment(raw_segment);
  if (!escaped) return std::unexpected(escaped.error());
  return Key(escaped_.empty() ? std::move(*escaped) : escaped_ + "/" + *escaped);
}

std::vector<std::string> Key::escaped_segments() const {
  std::vector<std::string> out;
  if (escaped_.empty()) return out;
  std::size_t start = 0;
  while (true) {
    const std::size_t slash = escaped_.find('/', start);
    if (slash == std::string::npos) {
      out.push_back(escaped_.substr(start));
      return out;
    }
    out.push_back(escaped_.substr(start, slash - start));
    start = slash + 1;
  }
}

std::string Key::leaf() const {
  if (escaped_.empty()) return {};
  const auto slash = escaped_.rfind('/');
  const auto last = slash == std::string::npos ? escaped_ : escaped_.substr(slash + 1);
  return unescape_segment(last).value_or(last);
}

bool Key::is_under(const Key& prefix) const noexcept {
  if (prefix.escaped_.empty()) return true;
  if (escaped_.size() < prefix.escaped_.size()) return false;
  if (escaped_.compare(0, prefix.escaped_.size(), prefix.escaped_) != 0) return false;
  return escaped_.size() == prefix.escaped_.size() || escaped_[prefix.escaped_.size()] == '/';
}

}  // namespace instance
