#include "instance/store.hpp"

#include <algorithm>

#include "instance/time.hpp"

namespace instance {

Store::~Store() = default;

Capabilities Store::capabilities() { return {}; }

Result<std::vector<Result<Document>>> Store::get_many(std::span<const Key> keys) {
  std::vector<Result<Document>> out;
  out.reserve(keys.size());
  for (const Key& key : keys) out.push_back(get(key));
  return out;
}

Result<std::string> Store::replace_if(const Key& key, std::string_view, std::string_view) {
  return fail(Errc::unsupported,
              "conditional replace of " + key.str() + " is not supported by " + describe());
}

Result<void> Store::remove_if(const Key& key, std::string_view) {
  return fail(Errc::unsupported,
              "conditional remove of " + key.str() + " is not supported by " + describe());
}

Result<LockGrant> Store::lock(const Key& key, Duration, std::string_view) {
  return fail(Errc::unsupported, "locks on " + key.str() + " are not supported by " + describe());
}

Result<Duration> Store::refresh_lock(const Key& key, std::string_view, Duration) {
  return fail(Errc::unsupported, "locks on " + key.str() + " are not supported by " + describe());
}

Result<void> Store::unlock(const Key& key, std::string_view) {
  return fail(Errc::unsupported, "locks on " + key.str() + " are not supported by " + describe());
}

Result<LockHolder> Store::lock_holder(const Key& key) {
  return fail(Errc::unsupported, describe() + " cannot tell who holds the lock on " + key.str());
}

Result<bool> Store::await_change(const Key& key, Duration, std::stop_token) {
  return fail(Errc::unsupported, describe() + " cannot tell when " + key.str() + " changes");
}

void Store::tune(const StoreTiming&) {}

}  // namespace instance
