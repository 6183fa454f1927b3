// The WebDAV store: native leases with LOCK (Timeout: Second-N), refresh
// (LOCK with If: (<token>)) and UNLOCK.
#include <algorithm>
#include <charconv>
#include <cstdint>
#include <optional>

#include "instance/sdk/random.hpp"
#include "instance/sdk/text.hpp"
#include "listing.hpp"
#include "store.hpp"

namespace instance::webdav {
namespace {

// "Second-N" with N = ceil(ttl in seconds), at least 1 and at most the
// RFC 4918 maximum of 2^32 - 1.
std::string timeout_value(Duration ttl) {
  constexpr std::int64_t kMax = 4294967295;
  const std::int64_t ns = std::max<std::int64_t>(ttl.count(), 0);
  const std::int64_t seconds =
      std::clamp<std::int64_t>(ns / 1'000'000'000 + (ns % 1'000'000'000 != 0 ? 1 : 0), 1, kMax);
  return "Second-" + std::to_string(seconds);
}

std::string lock_body(std::string_view owner) {
  return R"(<?xml version="1.0" encoding="utf-8"?>)"
         R"(<D:lockinfo xmlns:D="DAV:"><D:lockscope><D:exclusive/></D:lockscope>)"
         R"(<D:locktype><D:write/></D:locktype><D:owner>)" +
         xml_text(owner) + "</D:owner></D:lockinfo>";
}

// A lock token this store could have handed out: a URI of printable ASCII
// without spaces or the brackets the If and Lock-Token headers use. Anything
// else never reaches a header.
bool plausible_token(std::string_view token) {
  if (token.empty() || token.size() > 1024) return false;
  return std::ranges::all_of(token, [](unsigned char c) {
    return c > 0x20 && c < 0x7F && c != '<' && c != '>' && c != '(' && c != ')';
  });
}

// "<urn:uuid:...>" -> "urn:uuid:..."; "" when not in angle brackets.
std::string_view unbracket(std::string_view header) {
  if (header.size() < 2 || header.front() != '<' || header.back() != '>') return {};
  return header.substr(1, header.size() - 2);
}

// N from "Second-N"; -1 for "Infinite"; nullopt when unreadable.
std::optional<std::int64_t> granted_seconds(std::string_view timeout) {
  if (timeout == "Infinite") return -1;
  constexpr std::string_view kPrefix = "Second-";
  if (!timeout.starts_with(kPrefix)) return std::nullopt;
  timeout.remove_prefix(kPrefix.size());
  std::int64_t n = 0;
  const auto [end, ec] = std::from_chars(timeout.data(), timeout.data() + timeout.size(), n);
  if (ec != std::errc() || end != timeout.data() + timeout.size()) return std::nullopt;
  return n;
}

// What a LOCK reply's <timeout> says the server granted: the asked ttl
// rounded up to whole seconds (what we asked for) when the reply names none
// or an unreadable one; kForever for "Infinite".
Duration granted_of(std::string_view timeout, Duration ttl) {
  const auto seconds = granted_seconds(timeout);
  if (!seconds || *seconds == 0) return std::chrono::seconds(*granted_seconds(timeout_value(ttl)));
  if (*seconds < 0) return kForever;
  return std::chrono::seconds(*seconds);
}

Key lock_key_of(const Key& key) { return *Key::parse(std::string(kLockFolder) + "/" + key.str()); }

}  // namespace

Result<void> WebDavStore::require_native_lease(std::string_view op, const Key& key) {
  std::lock_guard lock(probe_mu_);
  auto caps = probe_locked();
  if (!caps) return std::unexpected(caps.error());
  if (caps->native_lease) return {};
  return fail(Errc::unsupported, what(op, key) + " at " + where_ +
                                     ": this server offers no usable WebDAV locks (see the "
                                     "capability log)");
}

Result<LockGrant> WebDavStore::lock(const Key& key, Duration ttl, std::string_view owner) {
  if (key.empty()) return fail(Errc::invalid, "lock at " + where_ + ": empty key");
  if (auto ok = require_native_lease("lock", key); !ok) return std::unexpected(ok.error());
  return send_lock("lock", key, lock_key_of(key), ttl, owner);
}

Result<Duration> WebDavStore::refresh_lock(const Key& key, std::string_view token, Duration ttl) {
  if (key.empty()) return fail(Errc::invalid, "refresh lock at " + where_ + ": empty key");
  return send_refresh("refresh lock", key, lock_key_of(key), token, ttl);
}

Result<void> WebDavStore::unlock(const Key& key, std::string_view token) {
  if (key.empty()) return fail(Errc::invalid, "unlock at " + where_ + ": empty key");
  return send_unlock("unlock", key, lock_key_of(key), token);
}

Result<LockHolder> WebDavStore::lock_holder(const Key& key) {
  if (key.empty()) return fail(Errc::invalid, "lock holder at " + where_ + ": empty key");
  return send_lock_discovery("who holds the lock", key, lock_key_of(key));
}

Result<LockHolder> WebDavStore::send_lock_discovery(std::string_view op, const Key& key,
                                                    const Key& at) {
  const Sent sent = send(propfind(key_url(base_, at, false), 0, kLockDiscoveryBody));
  const auto& r = sent.response;
  if (r.transport_ok() && r.status == 404) {
    return fail(Errc::not_found, what(op, key) + " at " + where_ + ": nobody (no lock resource)");
  }
  if (!r.transport_ok() || r.status != 207) return failed(op, key, sent);
  auto active = parse_lock_discovery(r.body, {});
  if (!active) {
    if (active.error().code == Errc::not_found) {
      return fail(Errc::not_found, what(op, key) + " at " + where_ + ": nobody");
    }
    return malformed(op, key, active.error().message);
  }
  // An empty token: the server lists the lock but hides its token.
  if (!active->token.empty() && !plausible_token(active->token)) {
    return malformed(op, key,
                     "the server's lock token \"" + printable(active->token) + "\" is not a URI");
  }
  return LockHolder{.token = std::move(active->token), .owner = std::move(active->owner)};
}

Result<LockGrant> WebDavStore::send_lock(std::string_view op, const Key& key, const Key& at,
                                         Duration ttl, std::string_view owner, long* status,
                                         std::string* server) {
  // lighttpd answers 403 (not 409) to a LOCK under a missing folder: make the
  // folders first (free once they are known).
  if (auto made = make_folders(at); !made) return std::unexpected(made.error());
  if (auto made = make_lock_resource(op, key, at); !made) return std::unexpected(made.error());
  const std::string body = lock_body(owner);
  const std::string timeout = timeout_value(ttl);
  net::Request request{.method = "LOCK",
                       .url = key_url(base_, at, false),
                       .headers = {"Depth: 0", "Timeout: " + timeout,
                                   "Content-Type: application/xml; charset=utf-8"},
                       .body = body,
                       .has_body = true,
                       .max_body = kMaxErrorBody};
  Sent sent = send(request);
  if (parent_missing(sent.response, {})) {
    forget_folders();  // a folder was removed behind our back
    if (auto made = make_folders(at); !made) return std::unexpected(made.error());
    sent = send(request);
  }
  const auto& r = sent.response;
  if (status) *status = r.transport_ok() ? r.status : 0;
  if (server) *server = r.header("Server");
  if (r.transport_ok() && r.status == 423) {
    std::string message = what(op, key) + " at " + where_ + ": held by another process or guard";
    if (sent.maybe_applied_before) {
      message += " (possibly our own earlier attempt, whose reply was lost; it expires after " +
                 timeout + ")";
    }
    return fail(Errc::locked, std::move(message));
  }
  if (!r.success()) return failed(op, key, sent);
  remember_folders(at);

  std::string token(unbracket(r.header("Lock-Token")));
  auto active = parse_lock_discovery(r.body, token);
  if (token.empty()) {
    if (!active) return malformed(op, key, "no Lock-Token header and " + active.error().message);
    if (active->token.empty()) {
      return malformed(op, key, "no Lock-Token header and no lock token in the reply");
    }
    token = active->token;
  }
  if (!plausible_token(token)) {
    return malformed(op, key, "the server's lock token \"" + printable(token) + "\" is not a URI");
  }
  // The server may grant a timeout of its own (nginx's lock zone).
  const Duration granted = granted_of(active ? active->timeout : std::string_view{}, ttl);
  return LockGrant{.token = std::move(token), .granted = granted};
}

Result<void> WebDavStore::make_lock_resource(std::string_view op, const Key& key, const Key& at) {
  {
    std::lock_guard lock(folders_mu_);
    if (lock_resources_.contains(at)) return {};
  }
  net::Request request{.method = "PUT",
                       .url = key_url(base_, at, false),
                       .headers = {"Content-Type: application/octet-stream", "If-None-Match: *"},
                       .body = {},
                       .has_body = true,
                       .max_body = kMaxErrorBody};
  Sent sent = send(request);
  if (parent_missing(sent.response, {Condition::absent, {}})) {
    forget_folders();
    if (auto made = make_folders(at); !made) return std::unexpected(made.error());
    sent = send(request);
  }
  const auto& r = sent.response;
  // 412: it exists; 423: it exists and someone holds the lease.
  if (!r.success() && !(r.transport_ok() && (r.status == 412 || r.status == 423))) {
    return failed(op, key, sent);
  }
  std::lock_guard lock(folders_mu_);
  lock_resources_.insert(at);
  return {};
}

Result<Duration> WebDavStore::send_refresh(std::string_view op, const Key& key, const Key& at,
                                           std::string_view token, Duration ttl) {
  auto gone = [&](Errc code, std::string_view why) {
    return fail(code, what(op, key) + " at " + where_ + ": lock lost: " + std::string(why));
  };
  if (!plausible_token(token)) return gone(Errc::not_found, "not a lock token of this store");
  net::Request request{
      .method = "LOCK",
      .url = key_url(base_, at, false),
      .headers = {"If: (<" + std::string(token) + ">)", "Timeout: " + timeout_value(ttl)},
      .max_body = kMaxErrorBody};
  const Sent sent = send(std::move(request));
  const auto& r = sent.response;
  if (r.success()) {
    // A server that forgot the lock (nginx, once it was unlocked or expired)
    // takes a new one instead, under a token of its own: ours is lost.
    // Release that one at once rather than leave it blocking others.
    if (const std::string fresh(unbracket(r.header("Lock-Token")));
        !fresh.empty() && fresh != token) {
      (void)send_unlock(op, key, at, fresh);
      return gone(Errc::conflict, "the server no longer knows the token (it granted a new lock)");
    }
    const auto active = parse_lock_discovery(r.body, token);
    return granted_of(active ? active->timeout : std::string_view{}, ttl);
  }
  if (r.transport_ok()) {
    switch (r.status) {
      case 404:
      case 410:
        return gone(Errc::not_found, "the locked resource is gone");
      case 412:
        return gone(Errc::conflict,
                    "the server no longer knows the token (expired, released "
                    "or taken over)");
      case 423:
        return gone(Errc::locked, "held by another process or guard");
      case 409:
        return gone(Errc::conflict, "HTTP 409 Conflict");
      case 400:  // phodav, to a token it does not know
        return gone(Errc::conflict, "the server no longer knows the token (HTTP 400)");
      default:
        break;
    }
  }
  return failed(op, key, sent);
}

Result<void> WebDavStore::send_unlock(std::string_view op, const Key& key, const Key& at,
                                      std::string_view token) {
  auto gone = [&] {
    return fail(Errc::not_found, what(op, key) + " at " + where_ +
                                     ": not locked with this token (expired or already released)");
  };
  if (!plausible_token(token)) return gone();
  net::Request request{.method = "UNLOCK",
                       .url = key_url(base_, at, false),
                       .headers = {"Lock-Token: <" + std::string(token) + ">"},
                       .max_body = kMaxErrorBody};
  const Sent sent = send(std::move(request));
  const auto& r = sent.response;
  if (r.success()) return {};
  // Apache answers 400 to an unknown token, lighttpd 409; both 412 or 404 on
  // other servers.
  if (r.transport_ok() && (r.status == 400 || r.status == 404 || r.status == 409 ||
                           r.status == 410 || r.status == 412)) {
    if (sent.maybe_applied_before) return {};  // our earlier attempt released it
    return gone();
  }
  return failed(op, key, sent);
}

bool WebDavStore::probe_native_lease() {
  const auto scratch = *Key::parse(std::string(kProbeFolder) + "/lock-" + random_hex(8));
  auto no_lease = [&](LogLevel level, std::string_view finding) {
    const LogField fields[] = {{"store", where_}, {"finding", std::string(finding)}};
    options_.logger->log(level, "WebDAV locks are not used as native leases on this server",
                         fields);
    return false;
  };
  // The lease resource is a document (make_lock_resource): remove it again
  // whatever the outcome.
  auto remove_scratch = [&] {
    net::Request cleanup{
        .method = "DELETE", .url = key_url(base_, scratch, false), .max_body = kMaxErrorBody};
    if (const auto r = send(std::move(cleanup)).response; !r.success() && r.status != 404) {
      options_.logger->warn("could not remove the lock probe's scratch document",
                            {{"store", where_}, {"key", scratch.str()}});
    }
  };
  long status = 0;
  std::string server;
  auto token = send_lock("probe lock", scratch, scratch, std::chrono::seconds(5),
                         "instance-guard capability probe", &status, &server);
  if (!token) {
    remove_scratch();
    if (status == 405 || status == 501) {
      // Not offered at all (nginx without dav_ext, rclone, ...): nothing is
      // wrong, the capability is simply absent.
      return no_lease(LogLevel::info, "LOCK answered HTTP " + std::to_string(status));
    }
    return no_lease(LogLevel::warn, "LOCK of a scratch document failed: " + token.error().message);
  }
  auto second = send_lock("probe lock", scratch, scratch, std::chrono::seconds(5),
                          "instance-guard capability probe (second)");
  bool exclusive = !second && second.error().code == Errc::locked;
  std::string finding;
  if (second) {
    finding = "a second LOCK of a locked document was granted: locks are not exclusive";
    (void)send_unlock("probe unlock", scratch, scratch, second->token);
  } else if (!exclusive) {
    finding = "a second LOCK of a locked document answered: " + second.error().message;
  }
  // Whether the server names a lock in its lockdiscovery (rclone lists
  // none): only then can a claim tell whose lock outlived its holder. Not
  // asked of the servers whose locks are refused below by name.
  const bool refused_by_name = server.starts_with("Apache") || server.starts_with("lighttpd");
  if (exclusive && !refused_by_name) {
    auto named = send_lock_discovery("probe lock discovery", scratch, scratch);
    // sabre/dav lists the lock without its token: the holder's lease
    // document then carries it, and an UNLOCK with a token that no longer
    // holds ends nothing.
    lock_discovery_ = named && (named->token.empty() || named->token == token->token);
    if (!lock_discovery_) {
      const LogField fields[] = {
          {"store", where_}, {"finding", named ? "it names another token" : named.error().message}};
      options_.logger->log(LogLevel::info,
                           "the WebDAV server does not say who holds a lock; a lock that "
                           "outlives its holder ends only at the server's own timeout",
                           fields);
    }
  }
  auto unlocked = send_unlock("probe unlock", scratch, scratch, token->token);
  if (exclusive && !unlocked) {
    exclusive = false;
    finding = "UNLOCK failed: " + unlocked.error().message;
  }
  remove_scratch();
  if (!exclusive) return no_lease(LogLevel::warn, finding);
  if (server.starts_with("Apache")) {
    // mod_dav checks a resource's locks and then records the new one without
    // holding a lock across both: concurrent LOCKs can all be granted (tests:
    // several winners in about 1 of 8 rounds of 8 connections, on existing
    // documents as on fresh URLs). Honoured, but not atomic.
    return no_lease(LogLevel::warn,
                    "the server is Apache httpd (Server: " + printable(server) +
                        "), whose mod_dav grants concurrent LOCKs of one resource to several "
                        "clients at once");
  }
  if (server.starts_with("lighttpd")) {
    // lighttpd 1.4.69 never expires a lock (still held long after its
    // Timeout) and grants a refresh with any token: a crashed holder would
    // keep everyone out for good. Conditional writes still serve.
    return no_lease(LogLevel::info, "the server is lighttpd (Server: " + printable(server) +
                                        "), whose locks do not expire at their timeout");
  }
  return true;
}

}  // namespace instance::webdav
