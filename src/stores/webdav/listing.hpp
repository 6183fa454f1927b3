// Reading a PROPFIND reply (207 Multi-Status) into folder entries.
//
// Elements are matched by local name in the DAV: namespace, whatever prefix
// the server uses (xmlns declarations are resolved, a default namespace
// included). Each <response>'s first <href> (absolute path or full URL) is
// split on '/', each segment percent-decoded, and made relative to the base
// path; <resourcetype><collection/> marks folders; the ETag of a 2xx
// propstat is kept. An item with a non-2xx propstat (OpenCloud's
// "425 TOO EARLY" while it processes an upload) is still listed.
//
// Every entry must be the base or beneath it, with names that are canonical
// escaped key segments. Anything else is Errc::malformed, with a message that
// shows the offending text with unprintable bytes escaped: bodies that are
// not XML or not a multistatus, a multistatus without any <response>, a
// <response> without <href>, hrefs with a query, a bad escape, an encoded
// '/', a dot segment, an empty segment, a name a key cannot have (non-UTF-8
// or any byte outside [A-Za-z0-9._-] once decoded), or a path outside the base.
//
// Pure function; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "instance/error.hpp"

namespace instance::webdav {

struct ListingEntry {
  std::vector<std::string> names;  // escaped key segments relative to the base; {} = the base
  bool collection = false;
  std::string etag;  // "" when the server sent none
};

// `base_segments` are the base path's percent-decoded segments.
Result<std::vector<ListingEntry>> parse_multistatus(std::string_view body,
                                                    const std::vector<std::string>& base_segments);

// What a DAV:lockdiscovery says about a lock: the DAV:activelock whose
// token is `want_token`, or the first one when `want_token` is empty (its
// token may then be empty: sabre/dav lists locks without one), with its
// timeout text ("Second-30", "Infinite") and its owner's text.
// The body is a LOCK reply (200/201, a DAV:prop) or a PROPFIND reply (207, a
// DAV:multistatus whose first prop holds the lockdiscovery). Inside
// lockdiscovery, elements in no namespace are read as DAV: ones (phodav
// writes its activelock children that way). Errc::malformed when the body is
// not such a reply or names no lock token; Errc::not_found when it is a
// well-formed reply whose lockdiscovery is empty (nobody holds a lock).
struct ActiveLock {
  std::string token;    // the locktoken href, trimmed
  std::string timeout;  // the timeout element's text, trimmed ("" when absent)
  std::string owner;    // the owner element's text, trimmed ("" when absent)
};
Result<ActiveLock> parse_lock_discovery(std::string_view body, std::string_view want_token);

}  // namespace instance::webdav
