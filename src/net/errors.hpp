// From a Response (libcurl result and HTTP status) to the store's error
// codes and messages: the one mapping of the HTTP stores.
//
// map_result():
//   404, 410                      -> not_found
//   409, 412                      -> conflict (stores refine 412 further)
//   423                           -> locked
//   401, 403                      -> permission
//   507                           -> no_space
//   413                           -> invalid
//   425, 429, 5xx                 -> unavailable (retried first)
//   501, 505                      -> unsupported
//   3xx                           -> invalid (redirects are not followed)
//   other 4xx                     -> invalid
//   timeout                       -> timeout
//   a body past the cap           -> malformed
//   a bad URL or scheme           -> invalid
//   no connection, reset, TLS     -> unavailable
// is_retryable() says which of these a retry may cure; may_have_applied()
// says whether a failed attempt may still have changed the server.
//
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include <curl/curl.h>

#include "instance/error.hpp"
#include "net/http.hpp"

namespace instance::net {

// The hint added to a message when TLS verification failed.
inline constexpr std::string_view kTlsHint =
    "; TLS verification failed: give the server's CA with --ca-file (or, only for testing, "
    "--insecure)";

Errc map_result(const Response& response);

// Transport errors a retry may cure: no connection, reset, timeout, a
// broken TLS handshake or HTTP/2 stream, nothing or garbage received.
bool transport_retryable(CURLcode curl);
// Whether a request that failed with `curl` may have reached the server
// (false only when nothing was sent: no name, no connection, no handshake).
bool transport_may_have_applied(CURLcode curl);
// Certificate and verification failures (the TLS hint applies).
bool is_tls_failure(CURLcode curl);

// Server answers that mean "not now": 425, 429, 5xx except 501, 505, 507,
// 508, 511.
bool status_retryable(long status);
// 500, 502, 504: the server (or one behind it) may have carried it out.
bool status_may_have_applied(long status);

bool is_retryable(const Response& response);
bool may_have_applied(const Response& response);

// "HTTP 404 Not Found", "HTTP 599", "no reply (<libcurl's message>)" or
// "reply body exceeds the size cap".
std::string describe(const Response& response);
// The reason phrase of a status ("Not Found"); "" for one not listed.
std::string_view reason(long status);

// The error for a failed request: "<context>: <describe>" plus a hint for
// TLS failures, redirects and 507, coded by map_result. `context` names the
// operation and the redacted endpoint ("get a/b at https://host/dav");
// headers and credentials never appear.
Error make_error(std::string_view context, const Response& response);

}  // namespace instance::net
