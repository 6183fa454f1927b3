// Errors shared by every part of instance-guard.
//
// Every fallible operation returns `Result<T>`, a `std::expected<T, Error>`.
// An `Error` carries one small code (what a caller branches on) and a message
// for a person (what went wrong, where, and what to do). Messages name the
// operation, the store endpoint (always redacted) and the key; they never
// contain a password, token or secret.
#pragma once

#include <expected>
#include <string>
#include <string_view>

#include "instance/export.hpp"

namespace instance {

enum class Errc {
  not_found,         // the key does not exist
  already_exists,    // create on a key that exists
  conflict,          // a conditional write lost: the version did not match
  locked,            // the store holds a lock on the key for someone else
  malformed,         // bytes that cannot be decoded: corrupt, oversized, nonsense reply
  unavailable,       // the store cannot be reached or answered with a server error
  timeout,           // no answer within the deadline
  permission,        // the store refused us: credentials, access rights
  invalid,           // the caller asked for something impossible: bad key, bad option
  unsupported,       // the store cannot do this operation at all
  no_space,          // the store is full
  cancelled,         // the caller asked to stop
  another_instance,  // a live instance of the service holds the store
  lost,              // a claim was lost after it had been granted
  internal,          // a bug or an unexpected system failure
};

// A short, stable name for the code ("not_found", "unavailable", ...).
INSTANCE_EXPORT std::string_view to_string(Errc code) noexcept;

struct Error {
  Errc code = Errc::internal;
  std::string message;
};

template <class T>
using Result = std::expected<T, Error>;

// Builds the unexpected value of a Result: `return fail(Errc::invalid, "...")`.
inline std::unexpected<Error> fail(Errc code, std::string message) {
  return std::unexpected(Error{code, std::move(message)});
}

}  // namespace instance
