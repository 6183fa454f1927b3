// Pure helpers for the etcd JSON gateway: base64, range ends, int64 fields
// and the mapping of gateway errors onto Errc.
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "instance/error.hpp"

namespace instance::etcd {

// Standard base64 with padding (what the gateway uses for bytes fields).
std::string base64_encode(std::string_view bytes);
// Strict: only the standard alphabet, padding required, no whitespace.
std::optional<std::string> base64_decode(std::string_view text);

// The smallest key greater than every key that starts with `prefix`: the
// prefix with trailing 0xFF bytes dropped and its last byte incremented.
// "\0" (every key from `prefix` on) when the prefix is empty or all 0xFF.
std::string prefix_range_end(std::string_view prefix);

// An int64 field the gateway writes as a JSON string ("42"), or a number;
// 0 when absent (proto3 leaves zeros out). nullopt when it is neither.
std::optional<std::int64_t> int64_field(const nlohmann::json& object, std::string_view name);

// Parses a version this store handed out: a positive decimal int64.
std::optional<std::int64_t> parse_revision(std::string_view text);

// gRPC status codes the gateway reports in {"code": N, "message": ...}.
enum class Grpc : int {
  ok = 0,
  cancelled = 1,
  unknown = 2,
  invalid_argument = 3,
  deadline_exceeded = 4,
  not_found = 5,
  already_exists = 6,
  permission_denied = 7,
  resource_exhausted = 8,
  failed_precondition = 9,
  aborted = 10,
  out_of_range = 11,
  unimplemented = 12,
  internal = 13,
  unavailable = 14,
  data_loss = 15,
  unauthenticated = 16,
};

// What a failed reply says, when it carries the gateway's error object.
struct GatewayError {
  Grpc code = Grpc::unknown;
  std::string message;  // etcd's text ("etcdserver: requested lease not found")
};
std::optional<GatewayError> parse_gateway_error(std::string_view body);

// The error code for a gateway error: NotFound -> not_found, Unavailable ->
// unavailable, ResourceExhausted -> no_space, Unauthenticated and
// PermissionDenied (and InvalidArgument about credentials, which etcd 3.4
// uses for a wrong password) -> permission, and so on.
Errc map_grpc(const GatewayError& error);

// True for answers a retry may cure, on this member or another:
// Unavailable (no leader, leader changed, request timed out, server
// stopped), DeadlineExceeded, Aborted, and FailedPrecondition "etcdserver:
// not leader" (mapped to Errc::unavailable).
bool is_retryable(const GatewayError& error);

}  // namespace instance::etcd
