// From gRPC statuses, CS3 status codes and data gateway HTTP answers to the
// store's error codes (docs/cs3.md, "Status codes").
//
// map_cs3_code:
//   NOT_FOUND -> not_found        ALREADY_EXISTS -> already_exists
//   ABORTED, FAILED_PRECONDITION -> conflict (operations refine these)
//   LOCKED -> locked              PERMISSION_DENIED, UNAUTHENTICATED -> permission
//   INSUFFICIENT_STORAGE -> no_space
//   INVALID_ARGUMENT, OUT_OF_RANGE -> invalid
//   UNIMPLEMENTED -> unsupported  CANCELLED -> cancelled
//   DEADLINE_EXCEEDED -> timeout
//   TOO_EARLY, UNAVAILABLE, RESOURCE_EXHAUSTED, INTERNAL, UNKNOWN,
//   DATA_LOSS, REDIRECTION, INVALID -> unavailable
// map_grpc_status (transport): DEADLINE_EXCEEDED -> timeout,
//   UNAUTHENTICATED / PERMISSION_DENIED -> permission, UNIMPLEMENTED ->
//   unsupported, CANCELLED -> cancelled, INVALID_ARGUMENT -> invalid,
//   everything else -> unavailable.
// map_http_status (data gateway): 404 -> not_found, 412 -> conflict,
//   423 -> locked, 401/403 -> permission, 507 -> no_space, 425/429/5xx ->
//   unavailable, 501 -> unsupported, other 4xx -> invalid.
//
// The retryable_* functions say which answers a retry may cure: CS3
// TOO_EARLY, UNAVAILABLE, RESOURCE_EXHAUSTED; gRPC UNAVAILABLE,
// DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED; HTTP 425, 429, 5xx but 501, 505,
// 507; libcurl transport errors.
//
// Pure functions; thread-safe.
#pragma once

#include <string_view>

#include <grpcpp/support/status.h>

#include "cs3/rpc/v1beta1/status.pb.h"
#include "instance/error.hpp"

namespace instance::cs3 {

using Code = ::cs3::rpc::v1beta1::Code;

Errc map_cs3_code(Code code);
Errc map_grpc_status(grpc::StatusCode code);
Errc map_http_status(long status);

bool retryable_cs3(Code code);
bool retryable_grpc(grpc::StatusCode code);
bool retryable_http(long status);

// "CODE_NOT_FOUND", "UNAVAILABLE", "HTTP 425 Too Early".
std::string_view code_name(Code code);
std::string_view grpc_code_name(grpc::StatusCode code);
std::string http_status_text(long status);

}  // namespace instance::cs3
