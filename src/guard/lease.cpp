// Internal: the lease document's and the lock owner's encodings (lease.hpp).
#include "lease.hpp"

#include "json_doc.hpp"

namespace instance::detail {

const Key& lease_key() {
  static const Key key = *Key::parse("instances.lease");
  return key;
}

const Key& lock_key() {
  static const Key key = *Key::parse("instances.lock");
  return key;
}

std::string encode_lease(const Lease& lease) {
  nlohmann::ordered_json j;
  j["holder"] = lease.holder;
  j["epoch"] = lease.epoch;
  j["expires_at"] = format_rfc3339(lease.expires_at);
  j["host"] = lease.host;
  if (lease.pid) j["pid"] = *lease.pid;
  j["boot_id"] = lease.boot_id;
  j["pid_ns"] = lease.pid_ns;
  if (!lease.machine_id.empty()) j["machine_id"] = lease.machine_id;
  if (lease.written_at) j["written_at"] = format_rfc3339(*lease.written_at);
  j["released"] = lease.released;
  if (!lease.lock_token.empty()) j["lock_token"] = lease.lock_token;
  if (lease.lock_expires_at) j["lock_expires_at"] = format_rfc3339(*lease.lock_expires_at);
  if (lease.locks_outlive_grant) {
    j["locks_outlive_grant"] = format_rfc3339(*lease.locks_outlive_grant);
  }
  return dump_json(j);
}

LeaseTemplate lease_template(Lease lease) {
  // The key "epoch" and the key "lock_token" each occur once as a key: in
  // the encoding, every quote inside a string value is escaped, so neither
  // `"epoch":` nor `"lock_token":"` can appear inside one. The epoch comes
  // before the token (the key order of encode_lease).
  lease.epoch = 1;
  lease.lock_token = "-";
  const std::string text = encode_lease(lease);
  constexpr std::string_view epoch_at = "\"epoch\":1";
  constexpr std::string_view token_at = "\"lock_token\":\"-\"";
  const auto e = text.find(epoch_at);
  const auto t = text.find(token_at);
  const auto e_end = e + epoch_at.size();
  const auto t_mid = t + token_at.size() - 2;  // the token's first character
  return LeaseTemplate{.head = text.substr(0, e_end - 1),
                       .middle = text.substr(e_end, t_mid - e_end),
                       .tail = text.substr(t_mid + 1)};
}

Result<Lease> decode_lease(std::string_view bytes) {
  auto bad = [](std::string_view why) {
    return fail(Errc::malformed, "not a lease document: " + std::string(why));
  };
  const auto j = nlohmann::json::parse(bytes.begin(), bytes.end(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return bad("not a JSON object");
  Lease lease;
  try {
    lease.holder = j.at("holder").get<std::string>();
    lease.epoch = j.at("epoch").get<std::uint64_t>();
    auto expires = parse_rfc3339(j.at("expires_at").get<std::string>());
    if (!expires) return bad(expires.error().message);
    lease.expires_at = *expires;
    lease.host = j.value("host", "");
    if (j.contains("pid")) lease.pid = j.at("pid").get<std::int64_t>();
    lease.boot_id = j.value("boot_id", "");
    lease.pid_ns = j.value("pid_ns", "");
    lease.machine_id = j.value("machine_id", "");
    lease.written_at = optional_time(j, "written_at");
    lease.released = j.value("released", false);
    lease.lock_token = j.value("lock_token", "");
    lease.lock_expires_at = optional_time(j, "lock_expires_at");
    lease.locks_outlive_grant = optional_time(j, "locks_outlive_grant");
  } catch (const std::exception& e) {
    return bad(e.what());
  }
  if (lease.holder.empty() || lease.epoch == 0) return bad("no holder or epoch");
  return lease;
}

std::string encode_lock_owner(const LockOwner& owner) {
  nlohmann::ordered_json j;
  j["instance_guard"] = owner.id;
  j["locked_at"] = format_rfc3339(owner.locked_at);
  j["ttl_ms"] = std::chrono::duration_cast<std::chrono::milliseconds>(owner.ttl).count();
  j["host"] = owner.host;
  if (owner.pid) j["pid"] = *owner.pid;
  j["boot_id"] = owner.boot_id;
  j["pid_ns"] = owner.pid_ns;
  return dump_json(j);
}

std::optional<LockOwner> decode_lock_owner(std::string_view text) {
  const auto j = nlohmann::json::parse(text.begin(), text.end(), nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("instance_guard")) return std::nullopt;
  try {
    LockOwner owner;
    owner.id = j.at("instance_guard").get<std::string>();
    auto locked = parse_rfc3339(j.at("locked_at").get<std::string>());
    const auto ttl_ms = j.at("ttl_ms").get<std::int64_t>();
    if (!locked || owner.id.empty() || ttl_ms <= 0) return std::nullopt;
    owner.locked_at = *locked;
    owner.ttl = std::chrono::milliseconds(ttl_ms);
    owner.host = j.value("host", "");
    if (j.contains("pid")) owner.pid = j.at("pid").get<std::int64_t>();
    owner.boot_id = j.value("boot_id", "");
    owner.pid_ns = j.value("pid_ns", "");
    return owner;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

LockOfHolder lock_of_holder(std::string_view token, std::string_view owner_text,
                            const std::optional<Lease>& lease) {
  LockOfHolder out{.token = std::string(token), .owner = decode_lock_owner(owner_text)};
  const bool lease_has_token = lease && !lease->lock_token.empty();
  if (!token.empty()) {
    out.named = lease_has_token && lease->lock_token == token;
  } else if (lease_has_token && (!out.owner || out.owner->id == lease->holder)) {
    out.named = true;
    out.token = lease->lock_token;
  }
  return out;
}

}  // namespace instance::detail
