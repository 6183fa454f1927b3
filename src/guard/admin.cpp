#include "instance/admin.hpp"

#include <algorithm>

#include "instance/guard.hpp"
#include "instance/time.hpp"
#include "lease.hpp"
#include "protocol.hpp"

namespace instance {
namespace {

// The clock skew status and release allow when judging a record of an
// earlier boot: the guard's default (a larger one only judges fewer dead).
constexpr Duration kStatusSkew = std::chrono::seconds(5);

}  // namespace

Result<std::vector<InstanceEntry>> list_instances(Store& store, WallTime now) {
  auto keys = store.list(records_prefix());
  if (!keys) return std::unexpected(keys.error());
  std::ranges::sort(*keys);
  std::vector<InstanceEntry> entries;
  const detail::HostIdentity here = detail::this_process();
  for (const Key& key : *keys) {
    auto doc = store.get(key);
    if (!doc && doc.error().code == Errc::not_found) continue;  // gone since the listing
    InstanceEntry entry;
    entry.key = key;
    entry.from_earlier_boot = doc && doc->from_earlier_boot;
    auto record = doc ? decode_record(doc->data) : std::unexpected(doc.error());
    if (record) {
      entry.readable = true;
      // As a claim judges it: a process on this host that is gone holds
      // nothing, whatever its record's expiry says.
      entry.process_gone = detail::gone_from_this_host(here, *record);
      entry.from_earlier_boot =
          entry.from_earlier_boot ||
          detail::of_earlier_boot(here, *record, now, kStatusSkew) == detail::EarlierBoot::dead;
      entry.live = record->live_at(now) && !entry.process_gone && !entry.from_earlier_boot;
      entry.record = std::move(*record);
    } else {
      // Unreadable counts as live, as in the claim, unless a crash before
      // this boot cut its write short.
      entry.live = !entry.from_earlier_boot;
      entry.problem = record.error().message;
    }
    entries.push_back(std::move(entry));
  }
  return entries;
}

namespace {

struct HeldLock {
  StoreLockEntry entry;
  std::string token;
};

// Who holds the store's lock, judged as a claim judges it (exclusive.cpp):
// the lease document when it was written under this very lock, else the
// lock's owner text.
Result<std::optional<HeldLock>> held_lock(Store& store) {
  auto holder = store.lock_holder(detail::lock_key());
  if (!holder) {
    const Errc code = holder.error().code;
    if (code == Errc::not_found || code == Errc::unsupported) return std::nullopt;
    return std::unexpected(holder.error());
  }
  std::optional<detail::Lease> lease;
  if (auto doc = store.get(detail::lease_key()); doc) {
    if (auto decoded = detail::decode_lease(doc->data); decoded) lease = std::move(*decoded);
  }
  const auto lock = detail::lock_of_holder(holder->token, holder->owner, lease);
  HeldLock held{.entry = {.owner = holder->owner}, .token = lock.token};
  if (lease) held.entry.locks_outlive_grant = lease->locks_outlive_grant;
  if (lock.named) {
    held.entry.holder = lease->holder;
    held.entry.expires_at = lease->expires_at;
    held.entry.stood_down = lease->released;
  } else if (lock.owner) {
    held.entry.holder = lock.owner->id;
    held.entry.expires_at = lock.owner->locked_at + lock.owner->ttl;
  }
  return std::optional<HeldLock>{std::move(held)};
}

}  // namespace

Result<std::optional<StoreLockEntry>> read_store_lock(Store& store) {
  auto held = held_lock(store);
  if (!held) return std::unexpected(held.error());
  if (!*held) return std::nullopt;
  return std::optional<StoreLockEntry>{std::move((*held)->entry)};
}

Result<Released> release_instance(Store& store, std::string_view id, WallTime now, bool force) {
  auto key = record_key(id);
  if (!key) return std::unexpected(key.error());
  auto doc = store.get(*key);
  if (!doc && doc.error().code != Errc::not_found) return std::unexpected(doc.error());
  if (doc && !force) {
    auto record = decode_record(doc->data);
    if (!record) {
      return fail(Errc::another_instance, "the record of " + std::string(id) + " cannot be read (" +
                                              record.error().message +
                                              "); remove it with --force if you are sure");
    }
    const detail::HostIdentity here = detail::this_process();
    if (record->live_at(now) && !doc->from_earlier_boot &&
        !detail::gone_from_this_host(here, *record) &&
        detail::of_earlier_boot(here, *record, now, kStatusSkew) != detail::EarlierBoot::dead) {
      return fail(Errc::another_instance,
                  "the record of " + std::string(id) + " is live until " +
                      format_rfc3339(record->expires_at) +
                      "; stop that instance first, or remove the record with --force");
    }
  }
  // The store's lock of `id`, judged before anything is removed.
  auto lock = held_lock(store);
  if (!lock) {
    return fail(lock.error().code,
                "cannot tell whether " + std::string(id) +
                    " holds the store's lock, so nothing was released: " + lock.error().message);
  }
  const bool holds_lock = *lock && (*lock)->entry.holder == id;
  if (holds_lock && !force && !(*lock)->entry.stood_down &&
      (!(*lock)->entry.expires_at || now < *(*lock)->entry.expires_at)) {
    return fail(Errc::another_instance,
                std::string(id) + " holds the store's lock" +
                    ((*lock)->entry.expires_at
                         ? ", its lease live until " + format_rfc3339(*(*lock)->entry.expires_at)
                         : std::string()) +
                    "; stop that instance first, or end its lock with --force");
  }
  if (!doc && !holds_lock) {
    return fail(Errc::not_found, "no record for " + std::string(id) + " in " + store.describe() +
                                     ", and the store's lock is not held by it");
  }

  if (holds_lock && (*lock)->token.empty()) {
    return fail(Errc::unsupported,
                std::string(id) +
                    " holds the store's lock, but the server does not say its "
                    "token, so it cannot be ended from here; nothing was released: "
                    "end it on the server or restart the server");
  }
  Released released;
  if (doc) {
    const bool conditional = store.capabilities().conditional_writes && !doc->version.empty();
    auto removed = conditional ? store.remove_if(*key, doc->version) : store.remove(*key);
    if (!removed && removed.error().code != Errc::not_found)
      return std::unexpected(removed.error());
    released.record = true;
  }
  if (holds_lock) {
    auto ended = store.unlock(detail::lock_key(), (*lock)->token);
    if (!ended && ended.error().code != Errc::not_found) {
      return fail(
          ended.error().code,
          std::string(released.record ? "removed the record of " + std::string(id) + ", but "
                                      : "") +
              "the store's lock " + std::string(id) +
              " held remains and keeps other instances out: " + ended.error().message +
              "; end it with the account that took it, or restart the server");
    }
    released.lock = true;
  }
  return released;
}

}  // namespace instance
