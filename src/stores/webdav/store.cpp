// The WebDAV store: reads, writes, folders, and building the store.
#include "store.hpp"

namespace instance {
namespace webdav {

Result<std::optional<Document>> WebDavStore::fetch(const Key& key) {
  const net::Request request{
      .method = "GET", .url = key_url(base_, key, false), .max_body = kMaxDocumentSize};
  Sent sent = send(request);
  if (sent.response.transport_ok() && sent.response.status == 403) {
    // Apache answers 403 to a GET of a document deleted between its stat and
    // its open (its log says "AH00132: file permissions deny server access"
    // with "No such file or directory"): a read racing a release. Asked
    // again, the document is gone (404) or back (200); a real refusal says
    // 403 again.
    options_.logger->debug("webdav GET answered 403; asking once more",
                           {{"key", key.str()}, {"store", where_}});
    sent = send(request);
  }
  const auto& r = sent.response;
  if (r.body_too_large) {
    return malformed("get", key, "the document is larger than the 1 MiB cap; left alone");
  }
  if (r.transport_ok() && (r.status == 404 || r.status == 410)) {
    return std::optional<Document>{};
  }
  if (r.transport_ok() && r.status >= 300 && r.status < 400) {
    return malformed("get", key, "not a document (the server redirects; a folder?)");
  }
  if (!r.success()) return failed("get", key, sent);
  if (r.status != 200) {
    return malformed("get", key, "unexpected " + net::describe(r));
  }
  remember_folders(key);
  return std::optional<Document>(Document{r.body, r.header("ETag")});
}

Result<Document> WebDavStore::get(const Key& key) {
  if (key.empty()) return fail(Errc::invalid, "get at " + where_ + ": empty key");
  auto doc = fetch(key);
  if (!doc) return std::unexpected(doc.error());
  if (!*doc) return fail(Errc::not_found, what("get", key) + " at " + where_ + ": not found");
  return std::move(**doc);
}

Result<std::vector<Result<Document>>> WebDavStore::get_many(std::span<const Key> keys) {
  return get_concurrently(*this, keys, kConcurrentReads);
}

std::string WebDavStore::learn_version(const Key& key, std::string_view written) {
  auto doc = fetch(key);
  if (doc && *doc && (*doc)->data == written) return (*doc)->version;
  if (!doc) {
    options_.logger->warn(
        "could not read a document back to learn its version; the next "
        "conditional write to it will fail",
        {{"key", key.str()}, {"store", where_}, {"error", doc.error().message}});
  } else {
    options_.logger->debug("a document changed before its version could be read",
                           {{"key", key.str()}, {"store", where_}});
  }
  return std::string(kSupersededVersion);
}

// ---------------------------------------------------------------- writes

Result<std::string> WebDavStore::write(std::string_view op, const Key& key, std::string_view data,
                                       Condition condition) {
  if (auto ok = check_write(op, key, data, where_); !ok) return std::unexpected(ok.error());
  if (auto ok = check_writable(op, key); !ok) return std::unexpected(ok.error());
  if (auto ok = ensure_base(); !ok) return std::unexpected(ok.error());
  if (condition.kind == Condition::match && !plausible_version(condition.version)) {
    return fail(Errc::conflict, what(op, key) + " at " + where_ + ": version does not match");
  }
  if (condition.kind == Condition::absent && !if_none_match_honoured_.load()) {
    // Until the server is known to refuse If-None-Match: * on an existing
    // document (OpenCloud ignores it), look first.
    auto existing = fetch(key);
    if (!existing && existing.error().code != Errc::malformed) {
      return std::unexpected(existing.error());
    }
    if (!existing || *existing) {
      return fail(Errc::already_exists, what(op, key) + " at " + where_ + ": already exists");
    }
  }
  net::Request request{.method = "PUT",
                       .url = key_url(base_, key, false),
                       .headers = {"Content-Type: application/octet-stream"},
                       .body = data,
                       .has_body = true,
                       .max_body = kMaxErrorBody};
  if (condition.kind == Condition::absent) request.headers.emplace_back("If-None-Match: *");
  if (condition.kind == Condition::match) {
    request.headers.push_back("If-Match: " + std::string(condition.version));
  }

  if (parent_known_missing(key)) {
    // Create first: some servers (lighttpd) close the connection after
    // answering 409 to a PUT, which would cost a new connection.
    if (auto made = make_folders(key); !made) return std::unexpected(made.error());
  }
  // chezdav answers 500 to a PUT under a missing folder, where a 500 is
  // otherwise a server error the send loop retries until its deadline: the
  // first 500 asks whether the document's folder exists, before any retry.
  // Missing, it is made below; there, the 500 is the server's and retried.
  bool asked = false;
  bool folder_gone = false;
  const auto ask_on_500 = [&](const net::Response& r) {
    if (asked || !r.transport_ok() || r.status != 500) return false;
    asked = true;
    folder_gone = folder_gone_after_500(key);
    return folder_gone;
  };
  Sent sent = send(request, ask_on_500);
  for (int pass = 0; pass < 2 && (folder_gone || parent_missing(sent.response, condition));
       ++pass) {
    // A missing folder (mod_dav, lighttpd and ocdav answer 409, rclone and
    // sabre/dav 404, chezdav 500): create the ones we do not know; the
    // second time, also those we thought existed (removed behind our back).
    if (pass == 1) forget_folders();
    if (auto made = make_folders(key); !made) return std::unexpected(made.error());
    asked = folder_gone = false;
    sent = send(request, ask_on_500);
  }
  const auto& r = sent.response;
  if (r.success()) {
    remember_folders(key);
    auto etag = r.header("ETag");
    return etag.empty() ? learn_version(key, data) : etag;
  }
  if (!r.transport_ok() || (r.status != 412 && r.status != 404)) return failed(op, key, sent);

  // 412 (or 404 for If-Match on an absent document): find out why.
  auto current = fetch(key);
  if (!current) return std::unexpected(current.error());
  if (*current && sent.maybe_applied_before && (*current)->data == data) {
    return (*current)->version;  // our own earlier attempt did it
  }
  if (condition.kind == Condition::absent) {
    return fail(Errc::already_exists, what(op, key) + " at " + where_ + ": already exists");
  }
  if (!*current) return fail(Errc::not_found, what(op, key) + " at " + where_ + ": not found");
  return fail(Errc::conflict,
              what(op, key) + " at " + where_ + ": version does not match (HTTP 412)");
}

long WebDavStore::folder_status(const std::string& url, bool once) {
  net::Request request = propfind(url, 0);
  const auto r = once ? send(std::move(request), [](const net::Response&) { return true; }).response
                      : send(std::move(request)).response;
  return r.transport_ok() ? r.status : 0;
}

bool WebDavStore::folder_gone_after_500(const Key& key) {
  const Key folder = folders_above(key, false).back();
  // One attempt: a server that answers 500 to this too cannot tell us, and
  // the PUT's own retries go on within their deadline.
  const long status = folder_status(key_url(base_, folder, true), true);
  options_.logger->debug(
      "webdav PUT answered 500; asked whether its folder exists",
      {{"key", key.str()}, {"store", where_}, {"folder_status", std::to_string(status)}});
  if (status == 207 || status == 200) {
    remember_folders(key);  // there: the 500 is a server error
    return false;
  }
  if (status != 404 && status != 409 && status != 410) return false;
  remember_missing(folder);
  return true;
}

Result<void> WebDavStore::ensure_base() {
  // A base directly under the root has a parent that always exists.
  if (base_.segments.size() < 2 || base_checked_.load() || folder_known(Key{})) return {};
  const long base = folder_status(key_url(base_, Key{}, true));
  if (base == 207 || base == 200) {
    remember_folders(Key{}, true);
    return {};
  }
  if (base != 404) return {};  // cannot tell: the write reports its own error
  // The base is missing: it is made on demand (make_folders) when its parent
  // exists. A missing parent is a misspelled space or path, unless asked.
  const std::string parent_path = base_.path.substr(0, base_.path.rfind('/'));
  const std::string parent = base_.origin + parent_path + "/";
  const long above = folder_status(parent);
  if (above != 404) {
    base_checked_ = true;
    return {};
  }
  if (!options_.create_path) {
    return fail(Errc::invalid,
                "store " + where_ + ": the folder " + redact_url(parent) +
                    " above the store's folder does not exist on the server (a misspelled "
                    "space or path?); create it, or pass --create-path "
                    "(INSTANCE_GUARD_CREATE_PATH=1) to have every missing folder created");
  }
  // Every folder of the path, top down; 405: it exists.
  for (std::size_t end = base_.path.find('/', 1); end != std::string::npos;
       end = base_.path.find('/', end + 1)) {
    net::Request request{.method = "MKCOL",
                         .url = base_.origin + base_.path.substr(0, end) + "/",
                         .max_body = kMaxErrorBody};
    const Sent sent = send(std::move(request));
    if (!sent.response.success() &&
        !(sent.response.transport_ok() && sent.response.status == 405)) {
      return failed("create folder " + base_.path.substr(0, end) + " for", Key{}, sent);
    }
  }
  options_.logger->info("created the missing folders of the store's path (--create-path)",
                        {{"store", where_}});
  base_checked_ = true;
  return {};
}

Result<void> WebDavStore::make_folders(const Key& key) {
  if (auto ok = check_writable("create folders for", key); !ok) return ok;
  if (auto ok = ensure_base(); !ok) return ok;
  for (int pass = 0; pass < 2; ++pass) {
    bool stale = false;
    for (const auto& folder : folders_above(key, false)) {  // the base first
      if (folder_known(folder)) continue;
      auto mkcol = [&] {
        return send(net::Request{
            .method = "MKCOL", .url = key_url(base_, folder, true), .max_body = kMaxErrorBody});
      };
      Sent sent = mkcol();
      // Apache answers 403 to a MKCOL that races another one for the same
      // folder; asked again, it answers 405 (exists) unless access is denied.
      if (sent.response.transport_ok() && sent.response.status == 403) sent = mkcol();
      const auto& r = sent.response;
      if (r.success() || (r.transport_ok() && r.status == 405)) {  // 405: it exists
        remember_folders(folder, true);
        continue;
      }
      if (parent_missing(r, {})) {  // MKCOL: 409 by RFC 4918; 404 on some servers
        if (folder.empty()) {
          return fail(Errc::not_found, "create folder at " + where_ +
                                           ": the parent folder of the store URL does not exist");
        }
        stale = true;  // a folder we thought existed is gone
        forget_folders();
        break;
      }
      return failed("create folder", folder, sent);
    }
    if (!stale) return {};
  }
  return fail(Errc::conflict,
              what("create folders for", key) + " at " + where_ + ": folders keep disappearing");
}

Result<void> WebDavStore::erase(std::string_view op, const Key& key, Condition condition) {
  if (key.empty()) return fail(Errc::invalid, std::string(op) + " at " + where_ + ": empty key");
  if (auto ok = check_writable(op, key); !ok) return ok;
  if (condition.kind == Condition::match && !plausible_version(condition.version)) {
    return fail(Errc::conflict, what(op, key) + " at " + where_ + ": version does not match");
  }
  net::Request request{
      .method = "DELETE", .url = key_url(base_, key, false), .max_body = kMaxErrorBody};
  if (condition.kind == Condition::match) {
    request.headers.push_back("If-Match: " + std::string(condition.version));
  }
  const Sent sent = send(std::move(request));
  const auto& r = sent.response;
  if (r.success()) return {};
  if (r.transport_ok() && (r.status == 404 || r.status == 410)) {
    if (sent.maybe_applied_before) return {};  // our earlier attempt removed it
    return fail(Errc::not_found, what(op, key) + " at " + where_ + ": not found");
  }
  if (r.transport_ok() && r.status == 412 && condition.kind == Condition::match) {
    auto current = fetch(key);
    if (!current) return std::unexpected(current.error());
    if (!*current) {
      if (sent.maybe_applied_before) return {};
      return fail(Errc::not_found, what(op, key) + " at " + where_ + ": not found");
    }
    return fail(Errc::conflict,
                what(op, key) + " at " + where_ + ": version does not match (HTTP 412)");
  }
  return failed(op, key, sent);
}

}  // namespace webdav

namespace {

bool is_loopback_host(std::string_view origin) {
  const auto host_start = origin.find("://");
  auto host = origin.substr(host_start == std::string_view::npos ? 0 : host_start + 3);
  if (host.starts_with("[::1]")) return true;
  host = host.substr(0, host.find(':'));
  return host.starts_with("127.") || host == "localhost";
}

}  // namespace

Result<std::shared_ptr<Store>> make_webdav_store(WebDavStoreOptions options) {
  auto base = webdav::parse_base_url(options.base_url);
  if (!base) return std::unexpected(base.error());
  const std::string where = redact_url(base->origin + base->path);
  net::ClientOptions http;
  switch (options.auth) {
    case WebDavAuth::none:
      http.auth = net::ClientOptions::Auth::none;
      break;
    case WebDavAuth::basic:
      if (options.user.empty() || options.user.find(':') != std::string::npos) {
        return fail(Errc::invalid,
                    "WebDAV store " + where + ": basic auth needs a user name without ':'");
      }
      if (options.secret.empty()) {
        return fail(Errc::invalid, "WebDAV store " + where + ": basic auth needs a password");
      }
      http.auth = net::ClientOptions::Auth::password;
      break;
    case WebDavAuth::bearer:
      if (options.secret.empty()) {
        return fail(Errc::invalid, "WebDAV store " + where + ": bearer auth needs a token");
      }
      http.auth = net::ClientOptions::Auth::bearer;
      break;
  }
  copy_tls_options(options, http.tls);
  if (auto ok = net::check_tls_files(http.tls); !ok) {
    return fail(Errc::invalid, "WebDAV store " + where + ": " + ok.error().message);
  }
  if (!options.logger) options.logger = null_logger();
  if (!options.clock) options.clock = system_clock();
  http.user = options.user;
  http.secret = options.secret;
  http.connect_timeout = options.connect_timeout;
  http.max_connections = kConcurrentReads;
  auto client = net::Client::create(std::move(http));
  if (!client) return std::unexpected(client.error());

  if (options.insecure && base->origin.starts_with("https://")) {
    options.logger->warn(
        "TLS certificate verification is off (--insecure): anyone on the path "
        "can read and change the records and see the credentials",
        {{"store", where}});
  }
  if (options.auth != WebDavAuth::none && base->origin.starts_with("http://") &&
      !is_loopback_host(base->origin)) {
    options.logger->warn("credentials are sent over plain http; use webdavs://",
                         {{"store", where}});
  }
  return std::make_shared<webdav::WebDavStore>(std::move(options), std::move(*base),
                                               std::move(*client));
}

}  // namespace instance
