// Instance records: one JSON document per running instance.
//
// The shape is the original Go guard's, so old and new guards see each
// other: `id`, `started_at`, `expires_at` (RFC 3339, UTC when we write), plus
// fields the original ignores: `host`, `pid`, `renewed_at`, and for the
// stronger modes `boot_id`, `pid_ns` and `machine_id` (to tell a dead
// process on this host, or a holder of an earlier boot of it, at once), `mode` and `state`
// ("claiming" while a verify claim settles; absent means held).
//
// Records live at `instances/<escaped id>` (record_key), but every file under
// `instances/` is judged, whatever its name, as the original does.
//
// decode_record reads exactly what the original's decoder (Go's
// encoding/json into a struct, times by time.Time.UnmarshalJSON) reads, or
// refuses; docs/record-format.md states Go's rules and where we are stricter.
// The safety rule: whenever it cannot agree with Go, it refuses (an
// unreadable record counts as live), so a record the original would count as
// live or unreadable is never judged expired here. In particular: keys match
// Go's case folding and the last matching key wins; a time is parsed from
// its raw JSON bytes (an escape inside it makes it unreadable); a record
// without `id` or `expires_at`, or a `null` document, is unreadable (the
// original treated it as expired).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "instance/clock.hpp"
#include "instance/error.hpp"
#include "instance/export.hpp"
#include "instance/key.hpp"

namespace instance {

struct Record {
  std::string id;
  WallTime started_at{};
  WallTime expires_at{};
  std::string host;                    // empty when unknown
  std::optional<std::int64_t> pid;     // absent when unknown
  std::optional<WallTime> renewed_at;  // absent in the original's records
  std::string boot_id;                 // the kernel boot the writer ran in
  std::string machine_id;              // the writer's machine (machine-id(5))
  std::string pid_ns;                  // the writer's pid namespace
  std::string mode;                    // the writer's claim mode
  std::string state;                   // "claiming", or empty: held

  bool live_at(WallTime now) const noexcept { return now < expires_at; }
  friend bool operator==(const Record&, const Record&) = default;
};

// Compact JSON: {"id":..,"started_at":..,"expires_at":..,"host":..,"pid":..,"renewed_at":..}
INSTANCE_EXPORT std::string encode_record(const Record& record);

// Errc::malformed (with the reason) when the bytes are not a record.
INSTANCE_EXPORT Result<Record> decode_record(std::string_view bytes);

// The folder all instance records live under: "instances".
INSTANCE_EXPORT const Key& records_prefix();

// "instances/<escaped id>"; Errc::invalid for an empty id.
INSTANCE_EXPORT Result<Key> record_key(std::string_view id);

}  // namespace instance
