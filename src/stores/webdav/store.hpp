// The WebDAV store's implementation class, shared by its source files:
//   store.cpp        reads, writes, folders, make_webdav_store
//   store_send.cpp   the retry loop and the Date check
//   store_list.cpp   listing (PROPFIND Depth 1, folder by folder)
//   store_probe.cpp  capabilities: the conditional-write and LOCK probe
//   store_lock.cpp   native leases: LOCK, refresh, UNLOCK, who holds a lock
// The contract is in instance/stores/webdav.hpp.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "errors.hpp"
#include "instance/sdk/concurrently.hpp"
#include "instance/sdk/timeouts.hpp"
#include "instance/stores/webdav.hpp"
#include "net/http.hpp"
#include "net/http_date.hpp"
#include "paths.hpp"

namespace instance::webdav {

inline constexpr std::size_t kMaxListingSize = std::size_t{16} << 20;
inline constexpr std::size_t kMaxErrorBody = std::size_t{64} << 10;
inline constexpr std::size_t kMaxListingDepth = 32;
// Returned as the version of a write whose result someone else overwrote
// before we could read its ETag: a conditional write with it always fails.
inline constexpr std::string_view kSupersededVersion = "\"instance-guard:superseded\"";
inline constexpr std::string_view kProbeFolder = ".instance-guard-probe";
// Native leases lock `<base>/.instance-guard-locks/<key>`, never the key's own
// URL: a LOCK of an unmapped URL makes a lock-null resource that Apache lists
// while it is locked and lighttpd keeps as an empty file. list() of the base
// skips this folder, so no prefix lists a lease, and get() of a lease's key
// finds nothing there.
inline constexpr std::string_view kLockFolder = ".instance-guard-locks";
inline constexpr std::string_view kPropfindBody =
    R"(<?xml version="1.0" encoding="utf-8"?>)"
    R"(<d:propfind xmlns:d="DAV:"><d:prop><d:resourcetype/><d:getetag/></d:prop></d:propfind>)";
inline constexpr std::string_view kLockDiscoveryBody =
    R"(<?xml version="1.0" encoding="utf-8"?>)"
    R"(<d:propfind xmlns:d="DAV:"><d:prop><d:lockdiscovery/></d:prop></d:propfind>)";

// A PROPFIND of `url` at `depth` (0 or 1) asking for `props` (a propfind
// body), its answer capped at kMaxListingSize.
inline net::Request propfind(std::string url, int depth, std::string_view props = kPropfindBody) {
  return net::Request{.method = "PROPFIND",
                      .url = std::move(url),
                      .headers = {"Depth: " + std::to_string(depth),
                                  "Content-Type: application/xml; charset=utf-8"},
                      .body = props,
                      .has_body = true,
                      .max_body = kMaxListingSize};
}

// A write's precondition.
struct Condition {
  enum Kind { none, absent, match } kind = none;
  std::string_view version;
};

// Whether a PUT's answer says a folder above it is missing: 409 (RFC 4918:
// mod_dav, lighttpd, ocdav), or 404 (rclone, sabre/dav), which a PUT
// otherwise gives only for If-Match on an absent document. chezdav's 500 is
// a server error as much as a missing folder: write() asks (folder_gone_after_500).
inline bool parent_missing(const net::Response& r, Condition condition) {
  return r.transport_ok() &&
         (r.status == 409 || (r.status == 404 && condition.kind != Condition::match));
}

// A version this store could have handed out: an entity tag, "..." or
// W/"...", of printable ASCII. Anything else cannot match and must never
// reach a header: If-Match: * matches every existing document, and sabre/dav
// skips an If-Match of 0 altogether (PHP reads "0" as false).
inline bool plausible_version(std::string_view version) {
  if (version.starts_with("W/")) version.remove_prefix(2);
  if (version.size() < 2 || !version.starts_with('"') || !version.ends_with('"')) return false;
  for (unsigned char c : version) {
    if (c < 0x20 || c >= 0x7F) return false;
  }
  return true;
}

class WebDavStore final : public Store {
 public:
  WebDavStore(WebDavStoreOptions options, BaseUrl base, std::unique_ptr<net::Client> http)
      : options_(std::move(options)),
        base_(std::move(base)),
        http_(std::move(http)),
        where_(redact_url(base_.origin + base_.path)),
        timeouts_({.retry_deadline = options_.retry_deadline,
                   .request_timeout = options_.request_timeout,
                   .max_clock_skew = options_.max_clock_skew}) {
    if (!options_.probe_capabilities) if_none_match_honoured_ = true;
  }

  std::string describe() const override { return where_; }

  void tune(const StoreTiming& timing) override {
    timeouts_.tune(timing, *options_.logger, where_);
  }

  Capabilities capabilities() override;
  Result<Document> get(const Key& key) override;
  // Each key as get() reads it, kConcurrentReads at a time (batch_reads).
  Result<std::vector<Result<Document>>> get_many(std::span<const Key> keys) override;
  Result<std::string> create(const Key& key, std::string_view data) override {
    return write("create", key, data, {Condition::absent, {}});
  }
  Result<std::string> replace(const Key& key, std::string_view data) override {
    return write("replace", key, data, {});
  }
  Result<void> remove(const Key& key) override { return erase("remove", key, {}); }
  Result<std::vector<Key>> list(const Key& prefix) override;
  Result<std::string> replace_if(const Key& key, std::string_view data,
                                 std::string_view version) override {
    if (auto ok = require_conditional_writes("conditional replace", key); !ok) {
      return std::unexpected(ok.error());
    }
    return write("conditional replace", key, data, {Condition::match, version});
  }
  Result<void> remove_if(const Key& key, std::string_view version) override {
    if (auto ok = require_conditional_writes("conditional remove", key); !ok) return ok;
    return erase("conditional remove", key, {Condition::match, version});
  }
  Result<LockGrant> lock(const Key& key, Duration ttl, std::string_view owner) override;
  Result<Duration> refresh_lock(const Key& key, std::string_view token, Duration ttl) override;
  Result<void> unlock(const Key& key, std::string_view token) override;
  // PROPFIND of the lock resource's DAV:lockdiscovery.
  Result<LockHolder> lock_holder(const Key& key) override;

 private:
  // The final answer to a request after retries.
  struct Sent {
    net::Response response;
    bool maybe_applied_before = false;  // an earlier attempt may have reached the server
    int attempts = 0;
  };

  // Sends `request`, retrying what a retry may cure within the deadline.
  // `settle`, when given, sees each answer that would be retried, before the
  // pause: true ends the retries with that answer.
  using Settle = std::function<bool(const net::Response&)>;
  Sent send(net::Request request, const Settle& settle = {});
  // The server clock check of a reply to a request sent at `sent_at`.
  void check_date(const net::Response& response, WallTime sent_at);

  Result<std::string> write(std::string_view op, const Key& key, std::string_view data,
                            Condition condition);
  Result<void> erase(std::string_view op, const Key& key, Condition condition);
  Result<void> list_folder(const Key& folder, bool top, std::size_t depth, std::vector<Key>& out);
  Result<void> make_folders(const Key& key);
  // Before the first write: the base folder exists, or its parent does (the
  // base is then made on demand), or create_path makes the missing ones; a
  // missing parent is refused (Errc::invalid) naming it. Free once the base
  // is known, and for a base directly under the server's root.
  Result<void> ensure_base();
  // PROPFIND Depth 0 of a folder URL: the status, 0 when not reached. With
  // `once`, a single attempt (an answer that would be retried is returned).
  long folder_status(const std::string& url, bool once = false);
  // After a 500 to a PUT of `key` (chezdav's answer under a missing folder):
  // whether the folder it goes in is missing (then remembered missing), by
  // one PROPFIND Depth 0. False when it exists or cannot be told.
  bool folder_gone_after_500(const Key& key);
  // Errc::permission when opened read-only (options_.read_only).
  Result<void> check_writable(std::string_view op, const Key& key) const {
    if (!options_.read_only) return {};
    return fail(Errc::permission, what(op, key) + " at " + where_ +
                                      ": the store was opened read-only and never writes");
  }
  // Probes once (probe_mu_ held); an error only when the server could not be
  // asked (then the next call probes again).
  Result<Capabilities> probe_locked();
  // Errc::unsupported unless conditional writes are declared (probing first).
  Result<void> require_conditional_writes(std::string_view op, const Key& key);
  // Errc::unsupported unless native leases are declared (probing first).
  Result<void> require_native_lease(std::string_view op, const Key& key);
  // Whether LOCK on this server is a native lease; logs why not. Part of the
  // probe (probe_mu_ held).
  bool probe_native_lease();

  // The raw lease requests on the resource `at` (already mapped: kLockFolder
  // for the guard's leases, a scratch URL for the probe); messages name `key`.
  // `status` and `server`, when given, receive the last reply's.
  Result<LockGrant> send_lock(std::string_view op, const Key& key, const Key& at, Duration ttl,
                              std::string_view owner, long* status = nullptr,
                              std::string* server = nullptr);
  // Makes `at` an (empty) document unless it exists: Apache's LOCK of an
  // unmapped URL is not atomic (several concurrent LOCKs all win), its LOCK
  // of an existing document is. Done once per resource and store.
  Result<void> make_lock_resource(std::string_view op, const Key& key, const Key& at);
  Result<Duration> send_refresh(std::string_view op, const Key& key, const Key& at,
                                std::string_view token, Duration ttl);
  Result<void> send_unlock(std::string_view op, const Key& key, const Key& at,
                           std::string_view token);
  // PROPFIND of `at`'s DAV:lockdiscovery: who holds its lock.
  Result<LockHolder> send_lock_discovery(std::string_view op, const Key& key, const Key& at);
  // Reads `key` back after a write that answered without an ETag.
  std::string learn_version(const Key& key, std::string_view written);
  // GET of `key`; nullopt when absent. Errors pass through.
  Result<std::optional<Document>> fetch(const Key& key);

  std::string what(std::string_view op, const Key& key) const {
    return key.empty() ? std::string(op) + " (the base folder)" : std::string(op) + " " + key.str();
  }
  std::unexpected<Error> failed(std::string_view op, const Key& key, const Sent& sent) const {
    auto error = make_error(what(op, key), where_, sent.response);
    if (sent.attempts > 1) {
      error.message += " (after " + std::to_string(sent.attempts) + " attempts)";
    }
    return std::unexpected(std::move(error));
  }
  std::unexpected<Error> malformed(std::string_view op, const Key& key, std::string why) const {
    return fail(Errc::malformed, what(op, key) + " at " + where_ + ": " + std::move(why));
  }
  static Result<void> check_write(std::string_view op, const Key& key, std::string_view data,
                                  const std::string& where) {
    if (key.empty()) return fail(Errc::invalid, std::string(op) + " at " + where + ": empty key");
    if (data.size() > kMaxDocumentSize) {
      return fail(Errc::invalid, std::string(op) + " " + key.str() + " at " + where +
                                     ": document of " + std::to_string(data.size()) +
                                     " bytes exceeds the 1 MiB cap");
    }
    return {};
  }

  // The folders above `key`, the base ({}) first; with `inclusive`, `key` too.
  static std::vector<Key> folders_above(const Key& key, bool inclusive) {
    std::vector<Key> out{Key{}};
    const auto names = key.escaped_segments();
    const std::size_t n = inclusive || names.empty() ? names.size() : names.size() - 1;
    for (std::size_t i = 0; i < n; ++i) {
      out.push_back(
          *Key::from_listing(out.back().empty() ? names[i] : out.back().str() + "/" + names[i]));
    }
    return out;
  }
  bool folder_known(const Key& folder) {
    std::lock_guard lock(folders_mu_);
    return folders_.contains(folder);
  }
  // Every folder above `key` exists (a write or read under it succeeded).
  void remember_folders(const Key& key, bool inclusive = false) {
    std::lock_guard lock(folders_mu_);
    for (auto& folder : folders_above(key, inclusive)) {
      missing_.erase(folder);
      folders_.insert(std::move(folder));
    }
  }
  void remember_missing(const Key& folder) {
    std::lock_guard lock(folders_mu_);
    folders_.erase(folder);
    missing_.insert(folder);
  }
  bool parent_known_missing(const Key& key) {
    std::lock_guard lock(folders_mu_);
    for (const auto& folder : folders_above(key, false)) {
      if (missing_.contains(folder)) return true;
    }
    return false;
  }
  void forget_folders() {
    std::lock_guard lock(folders_mu_);
    folders_.clear();
    missing_.clear();
  }

  const WebDavStoreOptions options_;
  const BaseUrl base_;
  const std::unique_ptr<net::Client> http_;
  const std::string where_;
  TunedTimeouts timeouts_;  // retry_deadline, request_timeout, max_clock_skew (tune())

  std::mutex folders_mu_;
  std::set<Key> folders_;         // folders known to exist ({} = the base)
  std::set<Key> missing_;         // folders a listing found missing: create before writing
  std::set<Key> lock_resources_;  // lock URLs known to exist as documents (folders_mu_)

  std::mutex probe_mu_;
  std::optional<Capabilities> capabilities_;
  // The probe found the server naming a lock's token in its lockdiscovery
  // (probe_mu_ held): Capabilities::ends_stale_locks.
  bool lock_discovery_ = false;
  // Whether the server refuses If-None-Match: * on an existing document; until
  // known, create() checks for the document first.
  std::atomic<bool> if_none_match_honoured_{false};

  net::ServerDateCheck date_check_;        // warns once about the server clock
  std::atomic<bool> base_checked_{false};  // ensure_base found nothing to refuse
};

}  // namespace instance::webdav
