// From libcurl results and HTTP statuses to the store's error codes.
//
// map_http_result() is the one mapping every WebDAV operation uses:
//   404, 410                      -> not_found
//   409, 412                      -> conflict (operations refine 412 further)
//   423                           -> locked
//   401, 403                      -> permission
//   507                           -> no_space
//   413                           -> invalid
//   425, 429, 5xx                 -> unavailable (retried first)
//   501, 505                      -> unsupported
//   3xx                           -> invalid (redirects are not followed)
//   other 4xx                     -> invalid
//   timeout                       -> timeout
//   no connection, reset, TLS     -> unavailable
//   a body past the cap           -> malformed
// is_retryable() says which of these a retry may cure; may_have_applied()
// says whether a failed attempt may still have changed the server.
//
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include <curl/curl.h>

#include "http_client.hpp"
#include "instance/error.hpp"

namespace instance::webdav {

Errc map_http_result(CURLcode curl, long status);

// Transport errors that may pass (no connection, reset, timeout) and server
// answers that mean "not now": 425, 429, 5xx except 501, 505, 507.
bool is_retryable(const HttpResponse& response);

// True when a failed attempt may have been carried out by the server anyway
// (the request was sent and the answer lost, or a 500/502/504).
bool may_have_applied(const HttpResponse& response);

// "HTTP 404 Not Found" or "no reply: <libcurl's message>".
std::string describe_result(const HttpResponse& response);

// The error for a failed request: "<operation> at <where>: <result><hint>".
// `where` must already be redacted. Adds a hint for 401/403, TLS failures
// and redirects; never includes headers or credentials.
Error make_error(std::string_view operation, std::string_view where, const HttpResponse& response);

}  // namespace instance::webdav
