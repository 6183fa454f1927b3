// Reads, writes, listing, folders and the capability probe of the CS3 store.
#include <fstream>
#include <iterator>

#include <grpcpp/security/tls_certificate_verifier.h>
#include <grpcpp/security/tls_credentials_options.h>

#include "store.hpp"

namespace instance::cs3 {
namespace {

// The first endpoint offered for one of `wanted` protocols, in order.
template <class Protocols>
const auto* pick(const Protocols& protocols, std::initializer_list<std::string_view> wanted) {
  for (auto name : wanted) {
    for (const auto& p : protocols) {
      if (p.protocol() == name && !p.token().empty()) return &p;
    }
  }
  return static_cast<decltype(&*protocols.begin())>(nullptr);
}

bool usable_header_value(std::string_view v) {
  if (v.empty() || v.size() > 16384) return false;
  for (unsigned char c : v) {
    if (c < 0x20 || c >= 0x7F) return false;
  }
  return true;
}

std::string parent_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash);
}

}  // namespace

Result<void> Cs3Store::check_key(std::string_view op, const Key& key) const {
  if (key.empty()) return fail(Errc::invalid, std::string(op) + " at " + where_ + ": empty key");
  const auto first = key.escaped_segments().front();
  if (first == kLockFolder || first == kProbeFolder) {
    return fail(Errc::invalid, what(op, key) + " at " + where_ + ": keys under " +
                                   std::string(first) + " are reserved for the store");
  }
  return {};
}

net::Response Cs3Store::transfer(bool put, const std::string& url, std::string_view transfer_token,
                                 std::string_view access_token, std::string_view body,
                                 std::size_t max_body) {
  if (options_.stats) ++options_.stats->http_requests;
  net::Request request{.method = put ? "PUT" : "GET",
                       .url = url,
                       .headers = {"X-Reva-Transfer: " + std::string(transfer_token),
                                   "x-access-token: " + std::string(access_token)},
                       .body = body,
                       .has_body = put,
                       .max_body = max_body,
                       .timeout = timeouts_.get().request_timeout};
  if (put) request.headers.emplace_back("Content-Type: application/octet-stream");
  const WallTime sent_at = options_.clock->wall();
  net::Response r = data_->perform(request);
  if (r.transport_ok()) check_date(r.header("Date"), sent_at);
  return r;
}

std::string Cs3Store::etag_of(const net::Response& r) {
  auto etag = r.header("ETag");
  return etag.empty() ? r.header("OC-ETag") : etag;
}

AttemptError Cs3Store::http_failure(const net::Response& r, const std::string& token) {
  if (r.transport_ok() && r.status == 401) {
    forget_token(token);  // expired between the call and the transfer
    return AttemptError{Error{Errc::permission, "the data gateway refused our token (HTTP 401)"},
                        true};
  }
  Error error = net::make_error("the data gateway", r);
  if (r.transport_ok() && r.status == 403) error.message += " (the transfer token was refused)";
  return AttemptError{std::move(error), net::is_retryable(r), net::may_have_applied(r)};
}

// ------------------------------------------------------------------ reads

Attempt<std::optional<Document>> Cs3Store::fetch(const std::string& path) {
  Session used;
  auto init = call<gw::InitiateFileDownloadResponse>(
      "InitiateFileDownload", [&](auto& stub, auto* context, auto* response, const Session& s) {
        used = s;
        sp::InitiateFileDownloadRequest request;
        *request.mutable_ref() = ref(s, path);
        return stub.InitiateFileDownload(context, request, response);
      });
  if (!init) return std::unexpected(std::move(init.error()));
  if (init->status().code() == rpc::CODE_NOT_FOUND) return std::optional<Document>{};
  if (init->status().code() != rpc::CODE_OK) {
    return status_failure("InitiateFileDownload", init->status());
  }
  const auto* protocol = pick(init->protocols(), {"spaces", "simple"});
  if (protocol == nullptr || !usable_header_value(protocol->token())) {
    return attempt_error(Errc::malformed,
                         "InitiateFileDownload offered no usable download endpoint");
  }
  net::Response r = transfer(false, protocol->download_endpoint(), protocol->token(), used.token,
                             {}, kMaxDocumentSize);
  if (r.transport_ok() && r.status == 404) return std::optional<Document>{};
  if (!r.transport_ok() || r.status != 200) return std::unexpected(http_failure(r, used.token));
  return std::optional<Document>{Document{std::move(r.body), etag_of(r)}};
}

Result<Document> Cs3Store::get(const Key& key) {
  if (auto ok = check_key("get", key); !ok) return std::unexpected(ok.error());
  return with_retries<Document>("get", key, [&](bool) -> Attempt<Document> {
    auto doc = fetch(path_of(key));
    if (!doc) return std::unexpected(std::move(doc.error()));
    if (!*doc) return attempt_error(Errc::not_found, "not found");
    if ((*doc)->version.empty()) {
      // No ETag on the transfer: ask Stat (a write in between shows as a
      // version that never matches the bytes, so a CAS with it fails).
      auto stat =
          call<sp::StatResponse>("Stat", [&](auto& stub, auto* c, auto* resp, const Session& s) {
            sp::StatRequest request;
            *request.mutable_ref() = ref(s, path_of(key));
            return stub.Stat(c, request, resp);
          });
      if (stat && stat->status().code() == rpc::CODE_OK) (*doc)->version = stat->info().etag();
    }
    return std::move(**doc);
  });
}

Attempt<std::optional<std::string>> Cs3Store::version_if_ours(const std::string& path,
                                                              std::string_view data) {
  auto doc = fetch(path);
  if (!doc) return std::unexpected(std::move(doc.error()));
  if (!*doc || (*doc)->data != data) return std::optional<std::string>{};
  return std::optional<std::string>{(*doc)->version.empty() ? std::string(kSupersededVersion)
                                                            : (*doc)->version};
}

// ------------------------------------------------------------------ writes

Attempt<void> Cs3Store::make_parents(const std::string& path) {
  // Every folder from the store's folder down to path's parent.
  std::vector<std::string> folders;
  for (std::string p = parent_of(path); !p.empty(); p = parent_of(p)) folders.push_back(p);
  for (auto it = folders.rbegin(); it != folders.rend(); ++it) {
    auto made = call<sp::CreateContainerResponse>(
        "CreateContainer", [&](auto& stub, auto* c, auto* resp, const Session& s) {
          sp::CreateContainerRequest request;
          *request.mutable_ref() = ref(s, *it);
          return stub.CreateContainer(c, request, resp);
        });
    if (!made) return std::unexpected(std::move(made.error()));
    const auto code = made->status().code();
    if (code != rpc::CODE_OK && code != rpc::CODE_ALREADY_EXISTS) {
      return status_failure("CreateContainer", made->status());
    }
  }
  return {};
}

Attempt<std::string> Cs3Store::touch(const std::string& path, bool absent_only) {
  for (int round = 0; round < 2; ++round) {
    auto touched = call<sp::TouchFileResponse>(
        "TouchFile", [&](auto& stub, auto* c, auto* resp, const Session& s) {
          sp::TouchFileRequest request;
          *request.mutable_ref() = ref(s, path);
          return stub.TouchFile(c, request, resp);
        });
    if (!touched) return std::unexpected(std::move(touched.error()));
    const auto code = touched->status().code();
    if (code == rpc::CODE_FAILED_PRECONDITION && round == 0) {
      if (auto made = make_parents(path); !made) return std::unexpected(std::move(made.error()));
      continue;
    }
    if (code == rpc::CODE_ALREADY_EXISTS && !absent_only) return std::string();
    if (code != rpc::CODE_OK) return status_failure("TouchFile", touched->status(), true);
    auto version = version_if_ours(path, "");
    if (!version) return std::unexpected(std::move(version.error()));
    return version->value_or(std::string(kSupersededVersion));
  }
  return attempt_error(Errc::invalid, "TouchFile: the parent folder cannot be made");
}

Result<std::string> Cs3Store::write(std::string_view op, const Key& key, std::string_view data,
                                    Condition condition) {
  if (auto ok = check_key(op, key); !ok) return std::unexpected(ok.error());
  if (data.size() > kMaxDocumentSize) {
    return fail(Errc::invalid, what(op, key) + " at " + where_ + ": document of " +
                                   std::to_string(data.size()) + " bytes exceeds the 1 MiB cap");
  }
  if (data.empty()) {
    if (condition.kind != Condition::absent) {
      return fail(Errc::invalid, what(op, key) + " at " + where_ +
                                     ": CS3 cannot overwrite a document with 0 bytes (reva "
                                     "refuses empty uploads); only create may write one");
    }
    return with_retries<std::string>(op, key, [&](bool) { return touch(path_of(key), true); });
  }
  if (condition.kind == Condition::match && !plausible_version(condition.version)) {
    return fail(Errc::conflict, what(op, key) + " at " + where_ +
                                    ": the version given is not one this store hands out");
  }
  return with_retries<std::string>(op, key, [&](bool maybe_applied_before) {
    return write_once(path_of(key), data, condition, maybe_applied_before);
  });
}

Attempt<std::string> Cs3Store::write_once(const std::string& path, std::string_view data,
                                          Condition condition, bool maybe_applied_before) {
  // A refusal our own earlier, lost attempt explains is a success.
  auto ours_after_all = [&](AttemptError refused) -> Attempt<std::string> {
    if (maybe_applied_before) {
      auto version = version_if_ours(path, data);
      if (version && *version) return **version;
    }
    return std::unexpected(std::move(refused));
  };
  Session used;
  gw::InitiateFileUploadResponse init;
  for (int round = 0;; ++round) {
    auto sent = call<gw::InitiateFileUploadResponse>(
        "InitiateFileUpload", [&](auto& stub, auto* c, auto* resp, const Session& s) {
          used = s;
          sp::InitiateFileUploadRequest request;
          *request.mutable_ref() = ref(s, path);
          if (condition.kind == Condition::absent) request.set_if_not_exist(true);
          if (condition.kind == Condition::match)
            request.set_if_match(std::string(condition.version));
          auto& length = (*request.mutable_opaque()->mutable_map())["Upload-Length"];
          length.set_decoder("plain");
          length.set_value(std::to_string(data.size()));
          return stub.InitiateFileUpload(c, request, resp);
        });
    if (!sent) return std::unexpected(std::move(sent.error()));
    init = std::move(*sent);
    const auto code = init.status().code();
    if (code == rpc::CODE_OK) break;
    if (code == rpc::CODE_FAILED_PRECONDITION && round == 0) {
      // The parent folder is missing (or the key is a folder: the next round says so).
      if (auto made = make_parents(path); !made) return std::unexpected(std::move(made.error()));
      continue;
    }
    if (code == rpc::CODE_FAILED_PRECONDITION) {
      return attempt_error(Errc::invalid,
                           "InitiateFileUpload answered CODE_FAILED_PRECONDITION: the key "
                           "is a folder, or its folder cannot be made");
    }
    if (code == rpc::CODE_ALREADY_EXISTS) {
      return ours_after_all(AttemptError{Error{Errc::already_exists, "the document exists"}});
    }
    if (code == rpc::CODE_ABORTED && condition.kind == Condition::match) {
      return ours_after_all(
          AttemptError{Error{Errc::conflict, "the version does not match (CODE_ABORTED)"}});
    }
    return status_failure("InitiateFileUpload", init.status(), true);
  }
  const auto* protocol = pick(init.protocols(), {"simple"});
  if (protocol == nullptr || !usable_header_value(protocol->token())) {
    return attempt_error(Errc::unsupported,
                         "InitiateFileUpload offered no \"simple\" upload endpoint");
  }
  net::Response r =
      transfer(true, protocol->upload_endpoint(), protocol->token(), used.token, data, 64 * 1024);
  if (r.success()) {
    if (auto etag = etag_of(r); !etag.empty()) return etag;
    auto version = version_if_ours(path, data);
    if (!version) return std::unexpected(std::move(version.error()));
    return version->value_or(std::string(kSupersededVersion));
  }
  if (r.transport_ok() && r.status == 412) {
    switch (condition.kind) {
      case Condition::absent:
        return ours_after_all(AttemptError{
            Error{Errc::already_exists, "another writer created the document first (HTTP 412)"}});
      case Condition::match:
        return ours_after_all(AttemptError{
            Error{Errc::conflict, "the version changed before the upload ended (HTTP 412)"}});
      case Condition::none:  // a creator raced us: initiate again, as an overwrite
        return attempt_error(Errc::conflict, "a concurrent creator won (HTTP 412)", true);
    }
  }
  if (r.transport_ok() && r.status == 423) {
    return attempt_error(Errc::locked, "the document is locked (HTTP 423)", true);
  }
  return std::unexpected(http_failure(r, used.token));
}

Result<std::string> Cs3Store::replace_if(const Key& key, std::string_view data,
                                         std::string_view version) {
  if (auto ok = require_conditional_writes("conditional replace", key); !ok) {
    return std::unexpected(ok.error());
  }
  return write("conditional replace", key, data, {Condition::match, version});
}

Attempt<void> Cs3Store::remove_path(const std::string& path, std::string_view lock_id,
                                    bool maybe_applied_before) {
  auto deleted =
      call<sp::DeleteResponse>("Delete", [&](auto& stub, auto* c, auto* resp, const Session& s) {
        sp::DeleteRequest request;
        *request.mutable_ref() = ref(s, path);
        request.set_lock_id(std::string(lock_id));
        return stub.Delete(c, request, resp);
      });
  if (!deleted) return std::unexpected(std::move(deleted.error()));
  const auto code = deleted->status().code();
  if (code == rpc::CODE_OK) return {};
  if (code == rpc::CODE_NOT_FOUND) {
    if (maybe_applied_before) return {};
    return attempt_error(Errc::not_found, "not found");
  }
  return status_failure("Delete", deleted->status(), lock_id.empty());
}

Result<void> Cs3Store::remove(const Key& key) {
  if (auto ok = check_key("remove", key); !ok) return ok;
  return with_retries<void>("remove", key, [&](bool maybe_applied_before) {
    return remove_path(path_of(key), "", maybe_applied_before);
  });
}

// ------------------------------------------------------------------ listing

Attempt<void> Cs3Store::list_folder(const std::string& folder_path, const Key& folder, bool top,
                                    std::size_t depth, std::vector<Key>& out) {
  if (depth > kMaxListingDepth) {
    return attempt_error(Errc::malformed, "folders nested deeper than " +
                                              std::to_string(kMaxListingDepth) + " levels");
  }
  std::string page_token;
  do {
    auto listed = call<sp::ListContainerResponse>(
        "ListContainer", [&](auto& stub, auto* c, auto* resp, const Session& s) {
          sp::ListContainerRequest request;
          *request.mutable_ref() = ref(s, folder_path);
          request.set_page_token(page_token);
          return stub.ListContainer(c, request, resp);
        });
    if (!listed) return std::unexpected(std::move(listed.error()));
    const auto code = listed->status().code();
    if (code == rpc::CODE_NOT_FOUND) return {};  // a missing prefix lists as empty
    if (code != rpc::CODE_OK) return status_failure("ListContainer", listed->status());
    for (const auto& info : listed->infos()) {
      std::string name = info.name();
      if (name.empty()) {
        const auto slash = info.path().rfind('/');
        name = slash == std::string::npos ? info.path() : info.path().substr(slash + 1);
      }
      if (top && folder.empty() && (name == kLockFolder || name == kProbeFolder)) continue;
      // Every name is listed, canonical or not: each file under instances/
      // is a record to judge, as the original judges it.
      auto as_key = Key::from_listing(folder.empty() ? name : folder.str() + "/" + name);
      if (!as_key || name.find('/') != std::string::npos) {
        return attempt_error(
            Errc::malformed,
            "the listing names an entry that cannot be a key: \"" + name.substr(0, 64) + "\"");
      }
      const Key child = std::move(*as_key);
      if (info.type() == sp::RESOURCE_TYPE_CONTAINER) {
        if (auto r = list_folder(folder_path + "/" + name, child, false, depth + 1, out); !r) {
          return r;
        }
      } else if (info.type() == sp::RESOURCE_TYPE_FILE) {
        out.push_back(child);
      }
    }
    page_token = listed->next_page_token();
  } while (!page_token.empty());
  return {};
}

Result<std::vector<Key>> Cs3Store::list(const Key& prefix) {
  return with_retries<std::vector<Key>>("list", prefix, [&](bool) -> Attempt<std::vector<Key>> {
    std::vector<Key> out;
    if (auto r = list_folder(path_of(prefix), prefix, true, 0, out); !r) {
      return std::unexpected(std::move(r.error()));
    }
    return out;
  });
}

// ------------------------------------------------------------------ capabilities

Result<Capabilities> Cs3Store::probed() {
  std::lock_guard lock(probe_mu_);
  if (capabilities_) return *capabilities_;
  if (!options_.probe_capabilities) {
    capabilities_ = Capabilities{
        .versions = true, .conditional_writes = true, .native_lease = true, .server_clock = false};
    return *capabilities_;
  }
  if (options_.read_only) {  // the probe writes: not learnt
    capabilities_ = capabilities_not_probed();
    return *capabilities_;
  }
  auto caps = probe_locked();
  if (caps) capabilities_ = *caps;
  return caps;
}

Capabilities Cs3Store::capabilities() {
  auto caps = probed();
  if (caps) {
    Capabilities out = *caps;
    out.batch_reads = true;  // get_many: a few reads at once, whatever the probe found
    return out;
  }
  // Not known yet (the gateway is down, or refuses us): answer what a CS3
  // gateway normally offers, uncached, marked as a guess with the probe's
  // error (the guard refuses to pick a mode from it). Nothing relies on it
  // unchecked: replace_if, remove_if and lock probe again first and fail
  // with the probe's error.
  return Capabilities{.versions = true,
                      .conditional_writes = true,
                      .native_lease = true,
                      .server_clock = false,
                      .unknown = caps.error()};
}

Result<Capabilities> Cs3Store::probe_locked() {
  const std::string name = random_hex(8);
  const Key scratch = *Key::parse(name);
  const std::string path = options_.folder + "/" + std::string(kProbeFolder) + "/" + name;
  auto retried = [&](std::string_view op, auto attempt) {
    return with_retries<std::string>(op, scratch, attempt);
  };
  auto v1 = retried("probe: write", [&](bool m) {
    return write_once(path, "probe-1", {Condition::absent, {}}, m);
  });
  if (!v1) return std::unexpected(v1.error());
  Capabilities caps{.versions = true};
  bool cas = true;
  std::string why;
  if (auto again = retried("probe: create again",
                           [&](bool m) {
                             return write_once(path, "probe-x", {Condition::absent, {}}, m);
                           });
      again || again.error().code != Errc::already_exists) {
    cas = false;
    why = "a create of an existing document was not refused";
  }
  const std::string wrong = "\"instance-guard-probe-wrong\"";
  if (auto stale = retried("probe: wrong version",
                           [&](bool m) {
                             return write_once(path, "probe-y", {Condition::match, wrong}, m);
                           });
      stale || stale.error().code != Errc::conflict) {
    cas = false;
    why = "a wrong if_match was not refused";
  }
  if (auto right = retried("probe: right version",
                           [&](bool m) {
                             return write_once(path, "probe-2", {Condition::match, *v1}, m);
                           });
      !right) {
    cas = false;
    why = "the right if_match was refused: " + right.error().message;
  }
  const bool lease = probe_lock(path);
  if (!lease) why = why.empty() ? "SetLock is missing or not exclusive" : why;
  caps.native_lease = lease;
  // remove_if needs a lock to be atomic.
  caps.conditional_writes = cas && lease;
  (void)with_retries<void>("probe: clean up", scratch,
                           [&](bool m) { return remove_path(path, "", m); });
  if (caps.conditional_writes) {
    options_.logger->debug("CS3 gateway probed: conditional writes and locks work",
                           {{"store", where_}});
  } else {
    options_.logger->warn("the CS3 gateway lacks what the guard's exclusive mode needs",
                          {{"store", where_},
                           {"why", why},
                           {"conditional_writes", caps.conditional_writes ? "yes" : "no"},
                           {"native_lease", caps.native_lease ? "yes" : "no"}});
  }
  return caps;
}

Result<void> Cs3Store::require_conditional_writes(std::string_view op, const Key& key) {
  auto caps = probed();
  if (!caps) return std::unexpected(caps.error());
  if (caps->conditional_writes) return {};
  return fail(Errc::unsupported, what(op, key) + " at " + where_ +
                                     ": this gateway's conditional writes are not atomic (see "
                                     "the probe's warning)");
}

Result<void> Cs3Store::require_native_lease(std::string_view op, const Key& key) {
  auto caps = probed();
  if (!caps) return std::unexpected(caps.error());
  if (caps->native_lease) return {};
  return fail(Errc::unsupported,
              what(op, key) + " at " + where_ + ": this gateway's locks are not usable");
}

// ------------------------------------------------------------------ construction

namespace {

// `what` names the file in messages ("the CA file").
Result<std::string> read_pem(const std::filesystem::path& file, std::string_view what) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return fail(Errc::invalid, "cannot read " + std::string(what) + " " + file.string());
  std::string pem((std::istreambuf_iterator<char>(in)), {});
  if (pem.empty()) {
    return fail(Errc::invalid, std::string(what) + " " + file.string() + " is empty");
  }
  return pem;
}

// The gRPC channel's credentials: TLS (cs3s://) verified against the
// system's roots or ca_file, with the client certificate when given; with
// `insecure`, TLS without verification; plain otherwise.
Result<std::shared_ptr<grpc::ChannelCredentials>> channel_credentials(
    const Cs3StoreOptions& options) {
  if (!options.tls) return grpc::InsecureChannelCredentials();
  if (options.insecure) {
    grpc::experimental::TlsChannelCredentialsOptions tls;
    tls.set_verify_server_certs(false);
    tls.set_check_call_host(false);
    tls.set_certificate_verifier(std::make_shared<grpc::experimental::NoOpCertificateVerifier>());
    return grpc::experimental::TlsCredentials(tls);
  }
  grpc::SslCredentialsOptions ssl;
  if (!options.ca_file.empty()) {
    auto pem = read_pem(options.ca_file, "the CA file");
    if (!pem) return std::unexpected(pem.error());
    ssl.pem_root_certs = std::move(*pem);
  }
  if (!options.client_cert.empty()) {
    auto cert = read_pem(options.client_cert, "the client certificate");
    if (!cert) return std::unexpected(cert.error());
    auto key = options.client_key.empty() ? cert : read_pem(options.client_key, "the client key");
    if (!key) return std::unexpected(key.error());
    ssl.pem_cert_chain = std::move(*cert);
    ssl.pem_private_key = std::move(*key);
  }
  return grpc::SslCredentials(ssl);
}

bool valid_gateway(std::string_view gateway) {
  const auto colon = gateway.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == gateway.size()) return false;
  for (char c : gateway.substr(colon + 1)) {
    if (c < '0' || c > '9') return false;
  }
  for (unsigned char c : gateway.substr(0, colon)) {
    if (c <= 0x20 || c >= 0x7F || c == '/' || c == '@') return false;
  }
  return true;
}

}  // namespace

}  // namespace instance::cs3

namespace instance {

Result<std::shared_ptr<Store>> make_cs3_store(Cs3StoreOptions options) {
  if (!cs3::valid_gateway(options.gateway)) {
    return fail(Errc::invalid,
                "CS3 gateway must be host:port, got \"" + options.gateway.substr(0, 100) + "\"");
  }
  if (options.space_id.empty() || options.space_id.find_first_of("!/ ") != std::string::npos) {
    return fail(Errc::invalid, "CS3 space id must be <storageid>$<spaceid> or <spaceid>, got \"" +
                                   options.space_id.substr(0, 100) + "\"");
  }
  {
    std::string_view rest = options.folder;
    if (rest.empty()) return fail(Errc::invalid, "CS3 store folder is empty");
    while (!rest.empty()) {
      const auto slash = rest.find('/');
      const auto segment = rest.substr(0, slash);
      if (segment.empty() || segment == "." || segment == ".." ||
          segment.find_first_of("\\\n\r") != std::string_view::npos) {
        return fail(Errc::invalid, "CS3 store folder \"" + options.folder.substr(0, 100) +
                                       "\" must be plain names joined by '/'");
      }
      rest = slash == std::string_view::npos ? std::string_view{} : rest.substr(slash + 1);
    }
  }
  if (options.client_id.empty()) {
    return fail(Errc::invalid,
                "CS3 store: no service account id (give --user or "
                "INSTANCE_GUARD_CS3_ID)");
  }
  if (options.client_secret.empty()) {
    return fail(Errc::invalid,
                "CS3 store: no service account secret (give --password-file, "
                "INSTANCE_GUARD_CS3_SECRET_FILE or INSTANCE_GUARD_CS3_SECRET)");
  }
  if (!options.logger) options.logger = null_logger();
  if (!options.clock) options.clock = system_clock();

  net::TlsOptions tls;
  copy_tls_options(options, tls);
  if (auto ok = net::check_tls_files(tls); !ok) return std::unexpected(ok.error());
  auto credentials = cs3::channel_credentials(options);
  if (!credentials) return std::unexpected(credentials.error());
  if (options.insecure) {
    options.logger->warn(
        "TLS verification of the CS3 gateway and data gateway is off (--insecure): anyone on "
        "the path can read and change what the guard stores");
  }
  auto data = net::Client::create({.tls = tls, .max_connections = kConcurrentReads});
  if (!data) return std::unexpected(data.error());
  grpc::ChannelArguments arguments;
  arguments.SetMaxReceiveMessageSize(16 << 20);
  auto channel = grpc::CreateCustomChannel(options.gateway, *credentials, arguments);
  auto stub = cs3::gw::GatewayAPI::NewStub(channel);
  std::string where = std::string(options.tls ? "cs3s://" : "cs3://") + options.gateway + "/" +
                      options.space_id + "/" + options.folder;
  return std::make_shared<cs3::Cs3Store>(std::move(options), std::move(where), std::move(stub),
                                         std::move(*data));
}

}  // namespace instance
