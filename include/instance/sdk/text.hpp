// For store implementations (the store SDK, include/instance/sdk/): text
// fit for messages and log lines, and percent-encoding, the one way every
// store escapes what it shows and what it puts in a URL.
#pragma once

#include <cstddef>
#include <expected>
#include <optional>
#include <string>
#include <string_view>

#include "instance/error.hpp"
#include "instance/export.hpp"

namespace instance {

// Text from a URL, a server or a file, fit for a message or a log line: the
// first `max` bytes (then "..."), every control, non-ASCII or backslash byte
// as \xNN. The one escaping every store's messages use.
INSTANCE_EXPORT std::string printable(std::string_view text, std::size_t max = 160);

// Text for an XML element or attribute value: markup escaped; bytes that
// XML 1.0 cannot carry or that are not ASCII become '?', so the document is
// always well-formed.
INSTANCE_EXPORT std::string xml_text(std::string_view text);

// A store URL fit for a message: redact_url (user info up to the last '@',
// sensitive query parameters), then printable.
INSTANCE_EXPORT std::string shown_store_url(std::string_view url);

// Errc::invalid, "store URL <shown_store_url>: <why>".
INSTANCE_EXPORT std::unexpected<Error> invalid_store_url(std::string_view url, std::string why);

// %XX escapes decoded (either case); nullopt for a truncated or non-hex escape.
INSTANCE_EXPORT std::optional<std::string> percent_decode(std::string_view text);

// Every byte of `raw` as %XX (uppercase hex) except the ASCII letters and
// digits and the bytes in `unreserved` (by default RFC 3986's other
// unreserved characters). The one percent-encoder of keys, URLs and store
// descriptions.
INSTANCE_EXPORT std::string percent_encode(std::string_view raw,
                                           std::string_view unreserved = "-._~");

}  // namespace instance
