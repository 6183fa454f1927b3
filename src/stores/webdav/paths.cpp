#include "paths.hpp"

#include <cstdio>

namespace instance::webdav {
namespace {

bool has_control_or_space(std::string_view text) noexcept {
  for (unsigned char c : text) {
    if (c <= 0x20 || c >= 0x7F) return true;
  }
  return false;
}

}  // namespace

Result<BaseUrl> parse_base_url(std::string_view url) {
  auto invalid = [](std::string why) {
    return fail(Errc::invalid, "WebDAV base URL: " + std::move(why));
  };
  std::string_view rest;
  BaseUrl base;
  if (url.starts_with("http://")) {
    rest = url.substr(7);
    base.origin = "http://";
  } else if (url.starts_with("https://")) {
    rest = url.substr(8);
    base.origin = "https://";
  } else {
    return invalid("must start with http:// or https://");
  }
  if (has_control_or_space(url)) return invalid("contains spaces or control characters");
  if (url.find_first_of("?#") != std::string_view::npos) {
    return invalid("a query or fragment is not allowed");
  }
  const auto slash = rest.find('/');
  const auto authority = rest.substr(0, slash);
  if (authority.find('@') != std::string_view::npos) {
    return invalid(
        "user info is not allowed in the URL; give credentials through files or the "
        "environment");
  }
  if (authority.empty()) return invalid("no host");
  base.origin.append(authority);
  auto path = slash == std::string_view::npos ? std::string_view{} : rest.substr(slash);
  while (path.ends_with('/')) path.remove_suffix(1);
  base.path = std::string(path);
  if (!path.empty()) {
    // path starts with '/': split the rest
    std::string_view segs = path.substr(1);
    while (true) {
      const auto next = segs.find('/');
      const auto seg = segs.substr(0, next);
      if (seg.empty()) return invalid("empty path segment (\"//\")");
      auto decoded = percent_decode(seg);
      if (!decoded) return invalid("bad percent escape in the path");
      if (*decoded == "." || *decoded == "..") return invalid("dot segments are not allowed");
      if (decoded->find('/') != std::string::npos || decoded->find('\0') != std::string::npos) {
        return invalid("encoded '/' or NUL in the path");
      }
      base.segments.push_back(std::move(*decoded));
      if (next == std::string_view::npos) break;
      segs = segs.substr(next + 1);
    }
  }
  return base;
}

std::vector<std::string> key_names(const Key& key) { return key.escaped_segments(); }

std::string key_url(const BaseUrl& base, const Key& key, bool collection) {
  std::string url = base.origin + base.path;
  // A canonical name holds only [A-Za-z0-9._-] and '%' (sent as %25); a
  // listed one (Key::from_listing) may hold any byte: all the others are
  // percent-encoded too.
  for (const auto& name : key.escaped_segments()) {
    url.push_back('/');
    url += percent_encode(name, "._-");
  }
  if (collection) url.push_back('/');
  return url;
}

}  // namespace instance::webdav
