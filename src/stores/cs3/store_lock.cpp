// Native leases on CS3 locks (SetLock / GetLock / RefreshLock / Unlock), and
// remove_if, which has no CS3 condition of its own and is built on a lock.
#include "store.hpp"

namespace instance::cs3 {
namespace {

// How long remove_if holds its lock at most (a crashed remove_if blocks
// other writes of that document this long).
constexpr Duration kRemoveLockTtl = std::chrono::seconds(30);

sp::Lock make_lock(std::string_view lock_id, WallTime expires, std::string_view owner) {
  sp::Lock lock;
  lock.set_lock_id(std::string(lock_id));
  lock.set_type(sp::LOCK_TYPE_EXCL);
  lock.set_app_name(std::string(kAppName));
  const auto ns = expires.time_since_epoch().count();
  lock.mutable_expiration()->set_seconds(static_cast<std::uint64_t>(ns / 1'000'000'000));
  lock.mutable_expiration()->set_nanos(static_cast<std::uint32_t>(ns % 1'000'000'000));
  if (!owner.empty()) {
    auto& entry = (*lock.mutable_opaque()->mutable_map())["owner"];
    entry.set_decoder("plain");
    entry.set_value(std::string(owner));
  }
  return lock;
}

// A lock id we could have handed out: "urn:uuid:" and printable ASCII.
bool plausible_token(std::string_view token) {
  if (!token.starts_with("urn:uuid:") || token.size() > 128) return false;
  for (unsigned char c : token) {
    if (c <= 0x20 || c >= 0x7F) return false;
  }
  return true;
}

}  // namespace

Attempt<void> Cs3Store::ensure_lock_resource(const std::string& path) {
  {
    std::lock_guard lock(lock_resources_mu_);
    if (lock_resources_.contains(path)) return {};
  }
  auto touched = touch(path, false);
  if (!touched) return std::unexpected(std::move(touched.error()));
  std::lock_guard lock(lock_resources_mu_);
  lock_resources_.insert(path);
  return {};
}

Attempt<std::string> Cs3Store::set_lock(const std::string& path, std::string_view lock_id,
                                        Duration ttl, std::string_view owner) {
  auto set =
      call<sp::SetLockResponse>("SetLock", [&](auto& stub, auto* c, auto* resp, const Session& s) {
        sp::SetLockRequest request;
        *request.mutable_ref() = ref(s, path);
        *request.mutable_lock() = make_lock(lock_id, options_.clock->wall() + ttl, owner);
        return stub.SetLock(c, request, resp);
      });
  if (!set) return std::unexpected(std::move(set.error()));
  const auto code = set->status().code();
  if (code == rpc::CODE_OK) return std::string(lock_id);
  if (code == rpc::CODE_FAILED_PRECONDITION || code == rpc::CODE_LOCKED) {
    return attempt_error(Errc::locked, "someone else holds the lock (SetLock answered " +
                                           std::string(code_name(code)) + ")");
  }
  return status_failure("SetLock", set->status());
}

Attempt<void> Cs3Store::release_lock(const std::string& path, std::string_view lock_id) {
  auto unlocked =
      call<sp::UnlockResponse>("Unlock", [&](auto& stub, auto* c, auto* resp, const Session& s) {
        sp::UnlockRequest request;
        *request.mutable_ref() = ref(s, path);
        request.mutable_lock()->set_lock_id(std::string(lock_id));
        request.mutable_lock()->set_type(sp::LOCK_TYPE_EXCL);
        request.mutable_lock()->set_app_name(std::string(kAppName));
        return stub.Unlock(c, request, resp);
      });
  if (!unlocked) return std::unexpected(std::move(unlocked.error()));
  const auto code = unlocked->status().code();
  if (code == rpc::CODE_OK) return {};
  // reva: no lock -> ABORTED, another id -> LOCKED (docs/cs3.md, "Locks").
  if (code == rpc::CODE_ABORTED || code == rpc::CODE_LOCKED ||
      code == rpc::CODE_FAILED_PRECONDITION || code == rpc::CODE_NOT_FOUND) {
    return attempt_error(Errc::not_found, "the lock is already gone (Unlock answered " +
                                              std::string(code_name(code)) + ")");
  }
  return status_failure("Unlock", unlocked->status());
}

Result<LockGrant> Cs3Store::lock(const Key& key, Duration ttl, std::string_view owner) {
  if (auto ok = check_key("lock", key); !ok) return std::unexpected(ok.error());
  if (auto ok = require_native_lease("lock", key); !ok) return std::unexpected(ok.error());
  if (ttl < std::chrono::seconds(1)) ttl = std::chrono::seconds(1);
  const std::string path = lock_path_of(key);
  const std::string id = "urn:uuid:" + random_hex(16);
  auto taken = with_retries<std::string>(
      "lock", key, [&](bool maybe_applied_before) -> Attempt<std::string> {
        if (auto made = ensure_lock_resource(path); !made) return std::unexpected(made.error());
        auto token = set_lock(path, id, ttl, owner);
        if (token || token.error().error.code != Errc::locked || !maybe_applied_before) {
          if (!token && token.error().error.code == Errc::not_found) {
            std::lock_guard lock(lock_resources_mu_);  // someone deleted it: make it again
            lock_resources_.erase(path);
            token.error().retryable = true;
          }
          return token;
        }
        // Our own earlier SetLock may have won with its answer lost: ask.
        auto held = call<sp::GetLockResponse>(
            "GetLock", [&](auto& stub, auto* c, auto* resp, const Session& s) {
              sp::GetLockRequest request;
              *request.mutable_ref() = ref(s, path);
              return stub.GetLock(c, request, resp);
            });
        if (held && held->status().code() == rpc::CODE_OK && held->lock().lock_id() == id)
          return id;
        return token;
      });
  if (!taken) return std::unexpected(std::move(taken.error()));
  return LockGrant{.token = std::move(*taken)};  // held as long as asked
}

Result<Duration> Cs3Store::refresh_lock(const Key& key, std::string_view token, Duration ttl) {
  if (auto ok = check_key("refresh lock", key); !ok) return std::unexpected(ok.error());
  if (!plausible_token(token)) {
    return fail(Errc::not_found, what("refresh lock", key) + " at " + where_ +
                                     ": not a lock token this store hands out");
  }
  if (ttl < std::chrono::seconds(1)) ttl = std::chrono::seconds(1);
  const std::string path = lock_path_of(key);
  auto kept = with_retries<void>("refresh lock", key, [&](bool) -> Attempt<void> {
    auto refreshed = call<sp::RefreshLockResponse>(
        "RefreshLock", [&](auto& stub, auto* c, auto* resp, const Session& s) {
          sp::RefreshLockRequest request;
          *request.mutable_ref() = ref(s, path);
          *request.mutable_lock() = make_lock(token, options_.clock->wall() + ttl, "");
          return stub.RefreshLock(c, request, resp);
        });
    if (!refreshed) return std::unexpected(std::move(refreshed.error()));
    switch (refreshed->status().code()) {
      case rpc::CODE_OK:
        return {};
      case rpc::CODE_FAILED_PRECONDITION:
      case rpc::CODE_NOT_FOUND:
        return attempt_error(Errc::not_found, "our lock is gone (expired on the server's clock)");
      case rpc::CODE_ABORTED:
        return attempt_error(Errc::conflict, "another holder has the lock now");
      case rpc::CODE_LOCKED:
        return attempt_error(Errc::locked, "another holder has the lock now");
      default:
        return status_failure("RefreshLock", refreshed->status());
    }
  });
  if (!kept) return std::unexpected(std::move(kept.error()));
  return Duration::zero();  // held as long as asked
}

Result<void> Cs3Store::unlock(const Key& key, std::string_view token) {
  if (auto ok = check_key("unlock", key); !ok) return ok;
  if (!plausible_token(token)) {
    return fail(Errc::not_found,
                what("unlock", key) + " at " + where_ + ": not a lock token this store hands out");
  }
  const std::string path = lock_path_of(key);
  return with_retries<void>("unlock", key, [&](bool maybe_applied_before) -> Attempt<void> {
    auto released = release_lock(path, token);
    if (!released && released.error().error.code == Errc::not_found && maybe_applied_before) {
      return {};
    }
    return released;
  });
}

Result<void> Cs3Store::remove_if(const Key& key, std::string_view version) {
  if (auto ok = require_conditional_writes("conditional remove", key); !ok) return ok;
  if (auto ok = check_key("conditional remove", key); !ok) return ok;
  if (!plausible_version(version)) {
    return fail(Errc::conflict, what("conditional remove", key) + " at " + where_ +
                                    ": the version given is not one this store hands out");
  }
  const std::string path = path_of(key);
  return with_retries<void>(
      "conditional remove", key, [&](bool maybe_applied_before) -> Attempt<void> {
        // Lock the document: every other write of it is refused until we are done.
        const std::string id = "urn:uuid:" + random_hex(16);
        auto locked = set_lock(path, id, kRemoveLockTtl, "");
        if (!locked) {
          AttemptError f = std::move(locked.error());
          if (f.error.code == Errc::not_found) {
            if (maybe_applied_before) return {};  // our lost Delete did it
            f.error.message = "not found";
          }
          if (f.error.code == Errc::locked) f.retryable = true;  // another remove_if, briefly
          return std::unexpected(std::move(f));
        }
        auto stat =
            call<sp::StatResponse>("Stat", [&](auto& stub, auto* c, auto* resp, const Session& s) {
              sp::StatRequest request;
              *request.mutable_ref() = ref(s, path);
              return stub.Stat(c, request, resp);
            });
        Attempt<void> outcome;
        if (!stat) {
          outcome = std::unexpected(std::move(stat.error()));
        } else if (stat->status().code() != rpc::CODE_OK) {
          outcome = status_failure("Stat", stat->status());
        } else if (stat->info().etag() != version) {
          outcome = attempt_error(Errc::conflict, "the version does not match");
        } else {
          auto removed = remove_path(path, id, false);
          if (removed) return {};  // the lock went with the document
          outcome = std::move(removed);
        }
        (void)release_lock(path, id);
        return outcome;
      });
}

bool Cs3Store::probe_lock(const std::string& path) {
  const std::string first = "urn:uuid:" + random_hex(16);
  const std::string second = "urn:uuid:" + random_hex(16);
  const Key scratch;
  auto got = with_retries<std::string>("probe: lock", scratch, [&](bool) {
    return set_lock(path, first, std::chrono::seconds(30), "probe");
  });
  if (!got) {
    options_.logger->info("CS3 SetLock does not work here",
                          {{"store", where_}, {"error", got.error().message}});
    return false;
  }
  auto again = with_retries<std::string>("probe: lock again", scratch, [&](bool) {
    return set_lock(path, second, std::chrono::seconds(30), "probe");
  });
  const bool exclusive = !again && again.error().code == Errc::locked;
  if (again) (void)release_lock(path, second);
  auto released =
      with_retries<void>("probe: unlock", scratch, [&](bool) { return release_lock(path, first); });
  return exclusive && released.has_value();
}

}  // namespace instance::cs3
