// The WebDAV store's errors: net::make_error (instance/src/net/errors.hpp:
// the one mapping of libcurl results and HTTP statuses to error codes) plus
// the hints that belong to WebDAV.
//
// Pure functions; thread-safe.
#pragma once

#include <string_view>

#include "instance/error.hpp"
#include "net/errors.hpp"

namespace instance::webdav {

// The error for a failed request: "<operation> at <where>: <result><hint>".
// `where` must already be redacted. Adds net::make_error's hints (TLS,
// redirects, 507) and how to give credentials for 401, what 403 means;
// never includes headers or credentials.
Error make_error(std::string_view operation, std::string_view where, const net::Response& response);

}  // namespace instance::webdav
