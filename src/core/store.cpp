#include "instance/store.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

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

Result<std::vector<std::pair<Key, Result<Document>>>> Store::get_all(const Key& prefix) {
  auto keys = list(prefix);
  if (!keys) return std::unexpected(keys.error());
  auto docs = get_many(*keys);
  if (!docs) return std::unexpected(docs.error());
  if (docs->size() != keys->size()) {
    return fail(Errc::malformed, describe() + " answered " + std::to_string(docs->size()) +
                                     " documents for " + std::to_string(keys->size()) + " keys");
  }
  std::vector<std::pair<Key, Result<Document>>> out;
  out.reserve(keys->size());
  for (std::size_t i = 0; i < keys->size(); ++i) {
    auto& doc = (*docs)[i];
    if (!doc && doc.error().code == Errc::not_found) continue;  // removed since listed
    out.emplace_back(std::move((*keys)[i]), std::move(doc));
  }
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

std::string LeaseTemplate::fill(std::uint64_t epoch, std::string_view token) const {
  std::string out;
  out.reserve(head.size() + 20 + middle.size() + token.size() + tail.size());
  out.append(head).append(std::to_string(epoch)).append(middle).append(token).append(tail);
  return out;
}

std::optional<std::uint64_t> lease_epoch(std::string_view document) {
  const auto j = nlohmann::json::parse(document.begin(), document.end(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  const auto it = j.find("epoch");
  if (it == j.end() || !it->is_number_unsigned()) return std::nullopt;
  const auto epoch = it->get<std::uint64_t>();
  if (epoch == 0) return std::nullopt;
  return epoch;
}

Result<LeaseClaimed> Store::claim_lease(const LeaseClaim& claim) {
  auto grant = lock(claim.lock, claim.ttl, claim.owner);
  if (!grant) return std::unexpected(grant.error());
  LeaseClaimed out{.grant = std::move(*grant)};
  out.previous = get(claim.lease);
  return out;
}

Result<LeaseRenewed> Store::renew_lease(const LeaseRenewal& renewal) {
  auto granted = refresh_lock(renewal.lock, renewal.token, renewal.ttl);
  if (!granted) return std::unexpected(granted.error());
  return LeaseRenewed{.granted = *granted};
}

Result<bool> Store::end_lease(const LeaseEnd&) { return false; }

void Store::tune(const StoreTiming&) {}

}  // namespace instance
