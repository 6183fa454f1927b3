// Paths on the WebDAV server: the base URL taken apart, keys turned into
// request URLs, and percent-decoding for hrefs read back from listings.
//
// A key's escaped segments are the file names on the server; in a URL each
// '%' of them is sent as %25, so the server stores "a%2Fb" literally and
// never sees an encoded slash or dot segment.
//
// Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "instance/error.hpp"
#include "instance/key.hpp"
#include "instance/sdk/credentials.hpp"  // percent_decode, percent_encode, printable

namespace instance::webdav {

struct BaseUrl {
  std::string origin;                 // "https://host:port" (no user info)
  std::string path;                   // "/a/b" as given (encoded), no trailing '/'; "" = root
  std::vector<std::string> segments;  // the path's segments, percent-decoded
};

// Accepts only http:// and https:// URLs with a host, without user info,
// query, fragment, dot segments, empty segments or bad escapes.
Result<BaseUrl> parse_base_url(std::string_view url);

// The URL path of `key` under the base: "/seg/seg" with '%' sent as %25;
// with `collection`, a trailing '/'.
std::string key_url(const BaseUrl& base, const Key& key, bool collection);

// The escaped key segments as the server stores them (the file names).
std::vector<std::string> key_names(const Key& key);

}  // namespace instance::webdav
