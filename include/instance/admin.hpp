// Operator views of a store: what `instance-guard status` and `release` do.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "instance/clock.hpp"
#include "instance/error.hpp"
#include "instance/export.hpp"
#include "instance/record.hpp"
#include "instance/store.hpp"

namespace instance {

struct InstanceEntry {
  Key key;
  std::optional<Record> record;  // absent when unreadable
  bool readable = false;
  bool live = false;    // unreadable records count as live
  std::string problem;  // why it is unreadable
};

// Every record under instances/, readable or not, sorted by key.
INSTANCE_EXPORT Result<std::vector<InstanceEntry>> list_instances(Store& store, WallTime now);

// Removes the record of `id`. A live or unreadable record is removed only
// with `force`; otherwise Errc::another_instance. Errc::not_found when absent.
INSTANCE_EXPORT Result<void> release_instance(Store& store, std::string_view id, WallTime now,
                                              bool force);

}  // namespace instance
