#include "errors.hpp"

#include <string>

namespace instance::cs3 {

namespace rpc = ::cs3::rpc::v1beta1;

Errc map_cs3_code(Code code) {
  switch (code) {
    case rpc::CODE_OK:
      return Errc::internal;  // not a failure: a caller bug
    case rpc::CODE_NOT_FOUND:
      return Errc::not_found;
    case rpc::CODE_ALREADY_EXISTS:
      return Errc::already_exists;
    case rpc::CODE_ABORTED:
    case rpc::CODE_FAILED_PRECONDITION:
      return Errc::conflict;
    case rpc::CODE_LOCKED:
      return Errc::locked;
    case rpc::CODE_PERMISSION_DENIED:
    case rpc::CODE_UNAUTHENTICATED:
      return Errc::permission;
    case rpc::CODE_INSUFFICIENT_STORAGE:
      return Errc::no_space;
    case rpc::CODE_INVALID_ARGUMENT:
    case rpc::CODE_OUT_OF_RANGE:
      return Errc::invalid;
    case rpc::CODE_UNIMPLEMENTED:
      return Errc::unsupported;
    case rpc::CODE_CANCELLED:
      return Errc::cancelled;
    case rpc::CODE_DEADLINE_EXCEEDED:
      return Errc::timeout;
    default:
      return Errc::unavailable;
  }
}

Errc map_grpc_status(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
      return Errc::internal;
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return Errc::timeout;
    case grpc::StatusCode::UNAUTHENTICATED:
    case grpc::StatusCode::PERMISSION_DENIED:
      return Errc::permission;
    case grpc::StatusCode::UNIMPLEMENTED:
      return Errc::unsupported;
    case grpc::StatusCode::CANCELLED:
      return Errc::cancelled;
    case grpc::StatusCode::INVALID_ARGUMENT:
      return Errc::invalid;
    default:
      return Errc::unavailable;
  }
}

bool retryable_cs3(Code code) {
  return code == rpc::CODE_TOO_EARLY || code == rpc::CODE_UNAVAILABLE ||
         code == rpc::CODE_RESOURCE_EXHAUSTED;
}

bool retryable_grpc(grpc::StatusCode code) {
  return code == grpc::StatusCode::UNAVAILABLE || code == grpc::StatusCode::DEADLINE_EXCEEDED ||
         code == grpc::StatusCode::RESOURCE_EXHAUSTED;
}

std::string_view code_name(Code code) {
  if (!rpc::Code_IsValid(code)) return "CODE_(unknown)";
  return rpc::Code_Name(code);
}

std::string_view grpc_code_name(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
      return "OK";
    case grpc::StatusCode::CANCELLED:
      return "CANCELLED";
    case grpc::StatusCode::UNKNOWN:
      return "UNKNOWN";
    case grpc::StatusCode::INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND:
      return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS:
      return "ALREADY_EXISTS";
    case grpc::StatusCode::PERMISSION_DENIED:
      return "PERMISSION_DENIED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION:
      return "FAILED_PRECONDITION";
    case grpc::StatusCode::ABORTED:
      return "ABORTED";
    case grpc::StatusCode::OUT_OF_RANGE:
      return "OUT_OF_RANGE";
    case grpc::StatusCode::UNIMPLEMENTED:
      return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL:
      return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE:
      return "UNAVAILABLE";
    case grpc::StatusCode::DATA_LOSS:
      return "DATA_LOSS";
    case grpc::StatusCode::UNAUTHENTICATED:
      return "UNAUTHENTICATED";
    default:
      return "(unknown)";
  }
}

}  // namespace instance::cs3
