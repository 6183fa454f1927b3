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
// The data gateway's HTTP answers map through net::map_result
// (src/net/errors.hpp), as every HTTP store's do.
//
// The retryable_* functions say which answers a retry may cure: CS3
// TOO_EARLY, UNAVAILABLE, RESOURCE_EXHAUSTED; gRPC UNAVAILABLE,
// DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED.
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

bool retryable_cs3(Code code);
bool retryable_grpc(grpc::StatusCode code);

// "CODE_NOT_FOUND", "UNAVAILABLE".
std::string_view code_name(Code code);
std::string_view grpc_code_name(grpc::StatusCode code);

}  // namespace instance::cs3
