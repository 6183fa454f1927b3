#include "instance/admin.hpp"

#include <algorithm>

#include "instance/guard.hpp"
#include "instance/time.hpp"

namespace instance {

Result<std::vector<InstanceEntry>> list_instances(Store& store, WallTime now) {
  auto keys = store.list(records_prefix());
  if (!keys) return std::unexpected(keys.error());
  std::ranges::sort(*keys);
  std::vector<InstanceEntry> entries;
  for (const Key& key : *keys) {
    auto doc = store.get(key);
    if (!doc && doc.error().code == Errc::not_found) continue;  // gone since the listing
    InstanceEntry entry;
    entry.key = key;
    auto record = doc ? decode_record(doc->data) : std::unexpected(doc.error());
    if (record) {
      entry.readable = true;
      entry.live = record->live_at(now);
      entry.record = std::move(*record);
    } else {
      entry.live = true;  // unreadable counts as live, as in the claim
      entry.problem = record.error().message;
    }
    entries.push_back(std::move(entry));
  }
  return entries;
}

Result<void> release_instance(Store& store, std::string_view id, WallTime now, bool force) {
  auto key = record_key(id);
  if (!key) return std::unexpected(key.error());
  auto doc = store.get(*key);
  if (!doc) return std::unexpected(doc.error());
  if (!force) {
    auto record = decode_record(doc->data);
    if (!record) {
      return fail(Errc::another_instance, "the record of " + std::string(id) + " cannot be read (" +
                                              record.error().message +
                                              "); remove it with --force if you are sure");
    }
    if (record->live_at(now)) {
      return fail(Errc::another_instance,
                  "the record of " + std::string(id) + " is live until " +
                      format_rfc3339(record->expires_at) +
                      "; stop that instance first, or remove the record with --force");
    }
  }
  const bool conditional = store.capabilities().conditional_writes && !doc->version.empty();
  return conditional ? store.remove_if(*key, doc->version) : store.remove(*key);
}

}  // namespace instance
