#include "errors.hpp"

namespace instance::webdav {

Error make_error(std::string_view operation, std::string_view where,
                 const net::Response& response) {
  Error error = net::make_error(std::string(operation) + " at " + std::string(where), response);
  if (response.transport_ok() && response.status == 401) {
    error.message +=
        "; the server refused the credentials (give them with --user and "
        "--password-file / --token-file, or INSTANCE_GUARD_USER and "
        "INSTANCE_GUARD_PASSWORD / INSTANCE_GUARD_TOKEN)";
  } else if (response.transport_ok() && response.status == 403) {
    error.message += "; the account may not access this folder";
  }
  return error;
}

}  // namespace instance::webdav
