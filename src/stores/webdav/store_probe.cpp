// The WebDAV store: capabilities, probed once with a scratch document.
#include <string>
#include <vector>

#include "instance/sdk/random.hpp"
#include "store.hpp"

namespace instance::webdav {

Capabilities WebDavStore::capabilities() {
  std::lock_guard lock(probe_mu_);
  auto caps = probe_locked();
  if (!caps) return Capabilities{.unknown = caps.error()};  // asked again next time
  Capabilities out = *caps;
  out.batch_reads = true;  // get_many: a few GETs at once, whatever the probe found
  return out;
}

Result<void> WebDavStore::require_conditional_writes(std::string_view op, const Key& key) {
  std::lock_guard lock(probe_mu_);
  auto caps = probe_locked();
  if (!caps) return std::unexpected(caps.error());
  if (caps->conditional_writes) return {};
  return fail(Errc::unsupported, what(op, key) + " at " + where_ +
                                     ": this server's conditional writes are not atomic or "
                                     "not honoured (see the capability warning)");
}

Result<Capabilities> WebDavStore::probe_locked() {
  if (capabilities_) return *capabilities_;
  if (!options_.probe_capabilities) {
    if_none_match_honoured_ = true;
    capabilities_ = Capabilities{.versions = true,
                                 .conditional_writes = true,
                                 .native_lease = true,
                                 .server_clock = true,
                                 .ends_stale_locks = true};
    return *capabilities_;
  }
  if (options_.read_only) {  // the probe writes: not learnt
    capabilities_ = capabilities_not_probed();
    return *capabilities_;
  }
  // A scratch document under a folder of its own, so listings of real
  // prefixes never see it.
  const auto scratch = *Key::parse(std::string(kProbeFolder) + "/probe-" + random_hex(8));
  // What the server got wrong; told once, with the consequence, at the end.
  std::vector<std::string> findings;
  auto warn = [&](std::string finding) { findings.push_back(std::move(finding)); };
  auto put = [&](std::vector<std::string> headers, std::string_view body) {
    headers.emplace_back("Content-Type: application/octet-stream");
    net::Request request{.method = "PUT",
                         .url = key_url(base_, scratch, false),
                         .headers = std::move(headers),
                         .body = body,
                         .has_body = true,
                         .max_body = kMaxErrorBody};
    return send(std::move(request)).response;
  };
  auto del = [&](std::vector<std::string> headers) {
    net::Request request{.method = "DELETE",
                         .url = key_url(base_, scratch, false),
                         .headers = std::move(headers),
                         .max_body = kMaxErrorBody};
    return send(std::move(request)).response;
  };

  Result<std::string> created = std::unexpected(Error{});
  if (auto made = make_folders(scratch); !made) {
    created = std::unexpected(made.error());
  } else {
    created = write("probe", scratch, "probe 1", {});
  }
  if (!created) {
    // Could not ask (unreachable, credentials, TLS, a refused write): the
    // capabilities stay unknown, never assumed, and are probed again next time.
    return std::unexpected(
        Error{created.error().code,
              "cannot probe what the WebDAV server supports: " + created.error().message});
  }
  Capabilities caps{};
  caps.versions = !created->empty() && *created != kSupersededVersion;
  if (!caps.versions) warn("no ETag on documents");

  const auto again = put({"If-None-Match: *"}, "probe 2");
  const bool inm = again.transport_ok() && again.status == 412;
  if (!inm) {
    warn("If-None-Match: * on an existing document answered " + net::describe(again));
  }
  const auto wrong = put({"If-Match: \"instance-guard-wrong-version\""}, "probe 3");
  const bool wrong_refused = wrong.transport_ok() && wrong.status == 412;
  if (!wrong_refused) {
    warn("If-Match with a wrong version answered " + net::describe(wrong));
  }
  const auto current = fetch(scratch);
  const std::string etag = current && *current ? (*current)->version : std::string{};
  if (caps.versions && current && *current && (*current)->data != "probe 1" && etag == *created) {
    // nginx: an ETag of mtime seconds and size, the same after a rewrite of
    // equal length within a second.
    caps.versions = false;
    warn("the ETag did not change when the document did");
  }
  if (caps.versions && again.header("Server").starts_with("PhodavServer")) {
    // chezdav (phodav): the ETag is the file's modification time alone,
    // which two writes within one tick of the file system's clock share
    // (the contract suite saw it).
    caps.versions = false;
    warn("the server is chezdav (Server: " + printable(again.header("Server")) +
         "), whose ETag is the modification time: a rewrite within one clock tick keeps it");
  }
  const auto right = put({"If-Match: " + etag}, "probe 4");
  const bool right_accepted = !etag.empty() && right.success();
  if (!right_accepted) {
    warn("If-Match with the current version answered " + net::describe(right) +
         " (weak or unstable ETags?)");
  }
  const auto del_wrong = del({"If-Match: \"instance-guard-wrong-version\""});
  const bool del_refused = del_wrong.transport_ok() && del_wrong.status == 412;
  if (!del_refused) {
    warn("DELETE with a wrong If-Match answered " + net::describe(del_wrong));
  }
  if (const auto cleanup = del({}); !cleanup.success() && cleanup.status != 404) {
    options_.logger->warn("could not remove the capability probe's scratch document",
                          {{"store", where_}, {"key", scratch.str()}});
  }
  // Apache's mod_dav checks If-Match / If-None-Match and then writes without
  // holding a lock: two concurrent conditional PUTs can both succeed (about
  // half the time in the tests' race). Honoured, but not atomic.
  const bool not_atomic = again.header("Server").starts_with("Apache");
  if (not_atomic) {
    warn("the server is Apache httpd (Server: " + printable(again.header("Server")) +
         "), whose mod_dav checks If-Match and If-None-Match without a lock, so two "
         "concurrent conditional writes can both succeed");
  }
  caps.native_lease = probe_native_lease();
  caps.server_clock = caps.native_lease;  // a lock's timeout runs on the server's clock
  // A server may keep a lock for longer than asked (sabre/dav's stock 1800 s)
  // or for ever (phodav). Where its lockdiscovery names the token (the probe
  // checked), UNLOCK with it ends it: the guard can end the lock of a holder
  // it proved fenced.
  caps.ends_stale_locks = caps.native_lease && lock_discovery_;
  if_none_match_honoured_ = inm;
  const bool if_match = caps.versions && wrong_refused && right_accepted && del_refused;
  caps.conditional_writes = if_match && inm && !not_atomic;
  if (!findings.empty()) {
    std::string joined;
    for (const auto& f : findings) joined += (joined.empty() ? "" : "; ") + f;
    options_.logger->warn(caps.native_lease
                              ? "the WebDAV server does not honour conditional writes; "
                                "exclusive claims use its locks instead"
                              : "the WebDAV server does not honour conditional writes and has "
                                "no usable locks; exclusive claims are not available on it",
                          {{"store", where_}, {"findings", joined}});
  }
  options_.logger->debug("webdav capabilities probed",
                         {{"store", where_},
                          {"versions", caps.versions ? "yes" : "no"},
                          {"if_match", if_match ? "yes" : "no"},
                          {"atomic", not_atomic ? "no" : "yes"},
                          {"if_none_match", inm ? "yes" : "no"},
                          {"conditional_writes", caps.conditional_writes ? "yes" : "no"},
                          {"native_lease", caps.native_lease ? "yes" : "no"}});
  capabilities_ = caps;
  return caps;
}

}  // namespace instance::webdav
