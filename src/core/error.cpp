#include "instance/error.hpp"

namespace instance {

std::string_view to_string(Errc code) noexcept {
  switch (code) {
    case Errc::not_found:
      return "not_found";
    case Errc::already_exists:
      return "already_exists";
    case Errc::conflict:
      return "conflict";
    case Errc::locked:
      return "locked";
    case Errc::malformed:
      return "malformed";
    case Errc::unavailable:
      return "unavailable";
    case Errc::timeout:
      return "timeout";
    case Errc::permission:
      return "permission";
    case Errc::invalid:
      return "invalid";
    case Errc::unsupported:
      return "unsupported";
    case Errc::no_space:
      return "no_space";
    case Errc::cancelled:
      return "cancelled";
    case Errc::another_instance:
      return "another_instance";
    case Errc::lost:
      return "lost";
    case Errc::internal:
      return "internal";
  }
  return "unknown";
}

}  // namespace instance
