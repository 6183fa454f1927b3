// Internal: what the guard's own JSON documents (the lease, lock owners,
// tenures) share in how they are written and read.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>

#include "instance/clock.hpp"
#include "instance/time.hpp"

namespace instance::detail {

// Compact JSON; invalid UTF-8 in a field is replaced, never thrown over.
inline std::string dump_json(const nlohmann::ordered_json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// An optional time field: absent, or RFC 3339 (anything else throws, as a
// malformed document).
inline std::optional<WallTime> optional_time(const nlohmann::json& j, const char* name) {
  if (!j.contains(name)) return std::nullopt;
  auto t = parse_rfc3339(j.at(name).get<std::string>());
  if (!t) throw std::invalid_argument(std::string(name) + ": " + t.error().message);
  return *t;
}

}  // namespace instance::detail
