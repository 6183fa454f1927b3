#include "gateway_double.hpp"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <ctime>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>

#include "cs3/gateway/v1beta1/gateway_api.grpc.pb.h"
#include "support/http_server.hpp"

namespace instance::testing {

namespace gw = ::cs3::gateway::v1beta1;
namespace sp = ::cs3::storage::provider::v1beta1;
namespace rpc = ::cs3::rpc::v1beta1;
namespace fs = std::filesystem;
using WallClock = std::chrono::system_clock;

namespace {

template <class Response>
grpc::Status answer(Response* response, rpc::Code code, std::string message = {}) {
  response->mutable_status()->set_code(code);
  response->mutable_status()->set_message(std::move(message));
  return grpc::Status::OK;
}

std::string http_date(WallClock::time_point t) {
  const std::time_t secs = WallClock::to_time_t(t);
  std::tm tm{};
  ::gmtime_r(&secs, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%a, %d %b %Y %H:%M:%S GMT", &tm);
  return buf;
}

}  // namespace

struct LockInfo {
  std::string id;
  std::string app;
  std::uint64_t expires_ns = 0;  // 0: never
};

struct Node {
  std::string etag;
  WallClock::time_point mtime;
  WallClock::time_point processing_until;
  std::optional<LockInfo> lock;
};

struct Transfer {
  bool upload = false;
  std::string path;
  bool existed = false;  // the target existed at initiate
  std::string if_match;
  std::string lock_id;
};

struct GatewayDouble::State final : gw::GatewayAPI::Service {
  GatewayDoubleOptions options;
  bool own_root = false;
  fs::path space_dir;

  mutable std::mutex mu;
  std::chrono::nanoseconds offset{0};
  std::map<std::string, int> tokens;  // token -> calls left (-1: unlimited)
  std::vector<std::string> issued;
  std::map<std::string, Node> nodes;  // relative path -> metadata (files only)
  std::map<std::string, Transfer> transfers;
  std::mt19937_64 rng{std::random_device{}()};
  int authentications = 0;
  int unauthenticated = 0;
  int too_early = 0;
  std::uint64_t etag_counter = 0;

  std::unique_ptr<grpc::Server> server;
  int grpc_port = 0;
  std::atomic<bool> grpc_stopped{false};

  std::unique_ptr<HttpServer> http;  // the data endpoint

  // ---------------------------------------------------------------- helpers
  WallClock::time_point now() const {
    return WallClock::now() + std::chrono::duration_cast<WallClock::duration>(offset);
  }
  std::uint64_t now_ns() const {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(now().time_since_epoch()).count());
  }

  std::string random_hex(int bytes) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    for (int i = 0; i < bytes; ++i) {
      const auto b = static_cast<unsigned>(rng() & 0xFF);
      out.push_back(kHex[b >> 4]);
      out.push_back(kHex[b & 0xF]);
    }
    return out;
  }
  std::string new_etag() { return "\"" + random_hex(8) + std::to_string(++etag_counter) + "\""; }

  // Consumes one call of the token in the metadata; false when refused.
  bool authorised(grpc::ServerContext* context) {
    const auto& md = context->client_metadata();
    const auto it = md.find("x-access-token");
    if (it == md.end()) return ++unauthenticated, false;
    return use_token(std::string(it->second.data(), it->second.size()), true);
  }
  bool use_token(const std::string& token, bool consume) {
    auto t = tokens.find(token);
    if (t == tokens.end()) return ++unauthenticated, false;
    if (consume && t->second > 0 && --t->second == 0) tokens.erase(t);
    return true;
  }

  // "./a/b" relative to the root -> "a/b" ("" for the root); nullopt when
  // the reference is not inside our space or climbs out.
  std::optional<std::string> resolve(const sp::Reference& ref) const {
    if (ref.resource_id().space_id() != options.space_id &&
        ref.resource_id().opaque_id() != options.space_id) {
      return std::nullopt;
    }
    std::string path = ref.path();
    if (path == "." || path == "./" || path.empty()) return std::string();
    if (!path.starts_with("./")) return std::nullopt;
    path = path.substr(2);
    std::string_view rest = path;
    while (!rest.empty()) {
      const auto slash = rest.find('/');
      const auto seg = rest.substr(0, slash);
      if (seg.empty() || seg == "." || seg == "..") return std::nullopt;
      rest = slash == std::string_view::npos ? std::string_view{} : rest.substr(slash + 1);
    }
    return path;
  }
  fs::path disk(const std::string& rel) const { return rel.empty() ? space_dir : space_dir / rel; }
  static std::string parent(const std::string& rel) {
    const auto slash = rel.rfind('/');
    return slash == std::string::npos ? std::string() : rel.substr(0, slash);
  }
  bool is_file(const std::string& rel) const { return fs::is_regular_file(disk(rel)); }
  bool is_dir(const std::string& rel) const { return fs::is_directory(disk(rel)); }
  bool processing(const Node& n) const { return now() < n.processing_until; }
  // The live lock of a node (an expired one is dropped, as reva does on read).
  LockInfo* live_lock(Node& n) {
    if (n.lock && n.lock->expires_ns != 0 && n.lock->expires_ns <= now_ns()) n.lock.reset();
    return n.lock ? &*n.lock : nullptr;
  }
  // reva's CheckLock: LOCKED without an id, ABORTED with a wrong or needless one.
  rpc::Code check_lock(Node& n, const std::string& lock_id) {
    LockInfo* l = live_lock(n);
    if (l == nullptr) return lock_id.empty() ? rpc::CODE_OK : rpc::CODE_ABORTED;
    if (lock_id.empty()) return rpc::CODE_LOCKED;
    return lock_id == l->id ? rpc::CODE_OK : rpc::CODE_ABORTED;
  }
  void write_file(const std::string& rel, std::string_view data) {
    const fs::path tmp = disk(parent(rel)) / (".upload-" + random_hex(6));
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      out.write(data.data(), static_cast<std::streamsize>(data.size()));
    }
    fs::rename(tmp, disk(rel));
    Node& n = nodes[rel];
    n.etag = new_etag();
    n.mtime = now();
    n.processing_until = now() + options.too_early;
  }
  void fill_info(const std::string& rel, sp::ResourceInfo* info) {
    const auto slash = rel.rfind('/');
    info->set_name(slash == std::string::npos ? rel : rel.substr(slash + 1));
    info->set_path("./" + rel);
    info->mutable_id()->set_storage_id(options.storage_id);
    info->mutable_id()->set_space_id(options.space_id);
    info->mutable_id()->set_opaque_id(rel.empty() ? options.space_id : "node-" + rel);
    if (is_dir(rel)) {
      info->set_type(sp::RESOURCE_TYPE_CONTAINER);
      info->set_etag("\"dir\"");
      return;
    }
    info->set_type(sp::RESOURCE_TYPE_FILE);
    Node& n = nodes[rel];
    info->set_etag(n.etag);
    info->set_size(static_cast<std::uint64_t>(fs::file_size(disk(rel))));
    if (processing(n)) {
      auto& e = (*info->mutable_opaque()->mutable_map())["status"];
      e.set_decoder("plain");
      e.set_value("processing");
    }
    if (LockInfo* l = live_lock(n)) info->mutable_lock()->set_lock_id(l->id);
  }
  void erase_below(const std::string& rel) {
    for (auto it = nodes.begin(); it != nodes.end();) {
      if (it->first == rel || it->first.starts_with(rel + "/")) {
        it = nodes.erase(it);
      } else {
        ++it;
      }
    }
  }
  sp::ResourceId root_id() const {
    sp::ResourceId id;
    id.set_storage_id(options.storage_id);
    id.set_space_id(options.space_id);
    id.set_opaque_id(options.space_id);
    return id;
  }

#define GUARD_CALL(response) \
  std::lock_guard lock(mu);  \
  if (!authorised(context)) return answer(response, rpc::CODE_UNAUTHENTICATED, "bad token")
#define RESOLVE(var, req, response)                                                     \
  const auto var##_opt = resolve(req->ref());                                           \
  if (!var##_opt) return answer(response, rpc::CODE_INVALID_ARGUMENT, "bad reference"); \
  const std::string& var = *var##_opt

  // ---------------------------------------------------------------- gRPC
  grpc::Status Authenticate(grpc::ServerContext*, const gw::AuthenticateRequest* request,
                            gw::AuthenticateResponse* response) override {
    std::lock_guard lock(mu);
    ++authentications;
    if (request->type() != "serviceaccounts" || request->client_id() != options.client_id ||
        request->client_secret() != options.client_secret) {
      return answer(response, rpc::CODE_PERMISSION_DENIED, "wrong credentials");
    }
    std::string token = "eyJ-access-" + random_hex(16);
    tokens[token] = options.token_calls > 0 ? options.token_calls : -1;
    issued.push_back(token);
    response->set_token(token);
    return answer(response, rpc::CODE_OK);
  }

  grpc::Status ListStorageSpaces(grpc::ServerContext* context,
                                 const sp::ListStorageSpacesRequest* request,
                                 sp::ListStorageSpacesResponse* response) override {
    GUARD_CALL(response);
    for (const auto& f : request->filters()) {
      if (f.type() != sp::ListStorageSpacesRequest::Filter::TYPE_ID) {
        return answer(response, rpc::CODE_INVALID_ARGUMENT, "unsupported filter");
      }
      // "<storage>$<space>!<node>" (storage optional), docs/cs3.md.
      std::string id = f.id().opaque_id();
      std::string storage;
      if (const auto d = id.find('$'); d != std::string::npos) {
        storage = id.substr(0, d);
        id = id.substr(d + 1);
      }
      if (const auto b = id.find('!'); b != std::string::npos) id = id.substr(0, b);
      if (id != options.space_id || (!storage.empty() && storage != options.storage_id)) {
        return answer(response, rpc::CODE_OK);  // no such space: an empty list
      }
    }
    auto* space = response->add_storage_spaces();
    space->mutable_id()->set_opaque_id(options.storage_id + "$" + options.space_id);
    *space->mutable_root() = root_id();
    space->set_name("instance-guard state");
    space->set_space_type(options.space_type);
    return answer(response, rpc::CODE_OK);
  }

  grpc::Status ListGrants(grpc::ServerContext* context, const sp::ListGrantsRequest* request,
                          sp::ListGrantsResponse* response) override {
    GUARD_CALL(response);
    RESOLVE(rel, request, response);
    if (!rel.empty()) return answer(response, rpc::CODE_OK);
    auto add_user = [&](const std::string& id) {
      auto* g = response->add_grants()->mutable_grantee();
      g->set_type(sp::GRANTEE_TYPE_USER);
      g->mutable_user_id()->set_opaque_id(id);
    };
    add_user(options.client_id);
    for (const auto& m : options.members) add_user(m);
    if (options.group_member)
      response->add_grants()->mutable_grantee()->set_type(sp::GRANTEE_TYPE_GROUP);
    return answer(response, rpc::CODE_OK);
  }

  grpc::Status Stat(grpc::ServerContext* context, const sp::StatRequest* request,
                    sp::StatResponse* response) override {
    GUARD_CALL(response);
    RESOLVE(rel, request, response);
    if (!fs::exists(disk(rel))) return answer(response, rpc::CODE_NOT_FOUND);
    fill_info(rel, response->mutable_info());
    return answer(response, rpc::CODE_OK);
  }

  grpc::Status ListContainer(grpc::ServerContext* context, const sp::ListContainerRequest* request,
                             sp::ListContainerResponse* response) override {
    GUARD_CALL(response);
    RESOLVE(rel, request, response);
    if (!fs::exists(disk(rel))) return answer(response, rpc::CODE_NOT_FOUND);
    if (!is_dir(rel)) return answer(response, rpc::CODE_FAILED_PRECONDITION, "not a folder");
    for (const auto& entry : fs::directory_iterator(disk(rel))) {
      const std::string name = entry.path().filename().string();
      if (name.starts_with(".upload-")) continue;  // in-flight uploads are internal
      fill_info(rel.empty() ? name : rel + "/" + name, response->add_infos());
    }
    return answer(response, rpc::CODE_OK);
  }

  grpc::Status CreateContainer(grpc::ServerContext* context,
                               const sp::CreateContainerRequest* request,
                               sp::CreateContainerResponse* response) override {
    GUARD_CALL(response);
    RESOLVE(rel, request, response);
    if (fs::exists(disk(rel))) return answer(response, rpc::CODE_ALREADY_EXISTS);
    if (!is_dir(parent(rel))) return answer(response, rpc::CODE_FAILED_PRECONDITION, "no parent");
    fs::create_directory(disk(rel));
    return answer(response, rpc::CODE_OK);
  }

  grpc::Status Delete(grpc::ServerContext* context, const sp::DeleteRequest* request,
                      sp::DeleteResponse* response) override {
    GUARD_CALL(response);
    RESOLVE(rel, request, response);
    if (rel.empty()) return answer(response, rpc::CODE_PERMISSION_DENIED, "the space root");
    if (!fs::exists(disk(rel))) return answer(response, rpc::CODE_NOT_FOUND);
    if (is_file(rel)) {
      Node& n = nodes[rel];
      if (processing(n)) {
        ++too_early;
        return answer(response, rpc::CODE_TOO_EARLY, "processing");
      }
      if (auto code = check_lock(n, request->lock_id()); code != rpc::CODE_OK) {
        return answer(response, code, "lock");
      }
    }
    fs::remove_all(disk(rel));
    erase_below(rel);
    return answer(response, rpc::CODE_OK);
  }

  grpc::Status TouchFile(grpc::ServerContext* context, const sp::TouchFileRequest* request,
                         sp::TouchFileResponse* response) override {
    GUARD_CALL(response);
    RESOLVE(rel, request, response);
    if (fs::exists(disk(rel))) return answer(response, rpc::CODE_ALREADY_EXISTS);
    if (rel.empty() || !is_dir(parent(rel))) {
      return answer(response, rpc::CODE_FAILED_PRECONDITION, "no parent");
    }
    std::ofstream(disk(rel), std::ios::binary);
    Node& n = nodes[rel];
    n = Node{};
    n.etag = new_etag();
    n.mtime = now();
    return answer(response, rpc::CODE_OK);
  }

  std::string endpoint() const { return http->url() + "/data"; }

  grpc::Status InitiateFileDownload(grpc::ServerContext* context,
                                    const sp::InitiateFileDownloadRequest* request,
                                    gw::InitiateFileDownloadResponse* response) override {
    GUARD_CALL(response);
    RESOLVE(rel, request, response);
    // reva answers OK without checking existence (docs/cs3.md, "Reading and writing files").
    const std::string token = "transfer-" + random_hex(16);
    transfers[token] = Transfer{.upload = false, .path = rel};
    issued.push_back(token);
    auto* p = response->add_protocols();
    p->set_protocol("spaces");
    p->set_download_endpoint(endpoint());
    p->set_token(token);
    return answer(response, rpc::CODE_OK);
  }

  grpc::Status InitiateFileUpload(grpc::ServerContext* context,
                                  const sp::InitiateFileUploadRequest* request,
                                  gw::InitiateFileUploadResponse* response) override {
    GUARD_CALL(response);
    RESOLVE(rel, request, response);
    if (rel.empty()) return answer(response, rpc::CODE_INTERNAL, "the root");
    if (is_dir(rel)) return answer(response, rpc::CODE_FAILED_PRECONDITION, "a folder");
    if (!is_dir(parent(rel))) return answer(response, rpc::CODE_FAILED_PRECONDITION, "no parent");
    const bool exists = is_file(rel);
    if (request->has_if_not_exist() && request->if_not_exist() && exists) {
      return answer(response, rpc::CODE_ALREADY_EXISTS);
    }
    if (request->options_case() == sp::InitiateFileUploadRequest::kIfMatch &&
        (!exists || nodes[rel].etag != request->if_match())) {
      return answer(response, rpc::CODE_ABORTED, "etag mismatch");
    }
    if (exists) {
      if (auto code = check_lock(nodes[rel], request->lock_id()); code != rpc::CODE_OK) {
        return answer(response, code, "lock");
      }
    }
    const std::string token = "transfer-" + random_hex(16);
    transfers[token] = Transfer{.upload = true,
                                .path = rel,
                                .existed = exists,
                                .if_match = request->if_match(),
                                .lock_id = request->lock_id()};
    issued.push_back(token);
    for (const char* protocol : {"simple", "tus"}) {
      auto* p = response->add_protocols();
      p->set_protocol(protocol);
      p->set_upload_endpoint(endpoint());
      p->set_token(token);
    }
    if (!exists) {
      auto& e = (*response->mutable_opaque()->mutable_map())["created"];
      e.set_decoder("plain");
      e.set_value("true");
    }
    return answer(response, rpc::CODE_OK);
  }

  grpc::Status SetLock(grpc::ServerContext* context, const sp::SetLockRequest* request,
                       sp::SetLockResponse* response) override {
    GUARD_CALL(response);
    RESOLVE(rel, request, response);
    if (!is_file(rel)) return answer(response, rpc::CODE_NOT_FOUND);
    if (request->lock().lock_id().empty()) return answer(response, rpc::CODE_INVALID_ARGUMENT);
    Node& n = nodes[rel];
    if (live_lock(n) != nullptr && options.exclusive_locks) {
      return answer(response, rpc::CODE_FAILED_PRECONDITION, "already locked");
    }
    const auto& e = request->lock().expiration();
    n.lock = LockInfo{request->lock().lock_id(), request->lock().app_name(),
                      e.seconds() * 1'000'000'000ULL + e.nanos()};
    return answer(response, rpc::CODE_OK);
  }

  grpc::Status GetLock(grpc::ServerContext* context, const sp::GetLockRequest* request,
                       sp::GetLockResponse* response) override {
    GUARD_CALL(response);
    RESOLVE(rel, request, response);
    if (!is_file(rel)) return answer(response, rpc::CODE_NOT_FOUND);
    LockInfo* l = live_lock(nodes[rel]);
    if (l == nullptr) return answer(response, rpc::CODE_NOT_FOUND);
    response->mutable_lock()->set_lock_id(l->id);
    response->mutable_lock()->set_app_name(l->app);
    return answer(response, rpc::CODE_OK);
  }

  grpc::Status RefreshLock(grpc::ServerContext* context, const sp::RefreshLockRequest* request,
                           sp::RefreshLockResponse* response) override {
    GUARD_CALL(response);
    RESOLVE(rel, request, response);
    if (!is_file(rel)) return answer(response, rpc::CODE_NOT_FOUND);
    LockInfo* l = live_lock(nodes[rel]);
    if (l == nullptr) return answer(response, rpc::CODE_FAILED_PRECONDITION, "not locked");
    const std::string& id = request->existing_lock_id().empty() ? request->lock().lock_id()
                                                                : request->existing_lock_id();
    if (id != l->id) return answer(response, rpc::CODE_ABORTED, "lock mismatch");
    if (request->lock().app_name() != l->app) return answer(response, rpc::CODE_PERMISSION_DENIED);
    const auto& e = request->lock().expiration();
    l->id = request->lock().lock_id();
    l->expires_ns = e.seconds() * 1'000'000'000ULL + e.nanos();
    return answer(response, rpc::CODE_OK);
  }

  grpc::Status Unlock(grpc::ServerContext* context, const sp::UnlockRequest* request,
                      sp::UnlockResponse* response) override {
    GUARD_CALL(response);
    RESOLVE(rel, request, response);
    if (!is_file(rel)) return answer(response, rpc::CODE_NOT_FOUND);
    if (request->lock().lock_id().empty()) return answer(response, rpc::CODE_INVALID_ARGUMENT);
    Node& n = nodes[rel];
    LockInfo* l = live_lock(n);
    if (l == nullptr) return answer(response, rpc::CODE_ABORTED, "not locked");
    if (l->id != request->lock().lock_id()) return answer(response, rpc::CODE_LOCKED, "mismatch");
    if (request->lock().app_name() != l->app) return answer(response, rpc::CODE_PERMISSION_DENIED);
    n.lock.reset();
    return answer(response, rpc::CODE_OK);
  }
#undef GUARD_CALL
#undef RESOLVE

  // ---------------------------------------------------------------- HTTP
  HttpReply handle(const HttpRequest& request) {
    std::lock_guard lock(mu);
    HttpReply reply;
    reply.headers.emplace_back("Date", http_date(now()));
    auto header = [&](const char* name) {
      auto it = request.headers.find(name);
      return it == request.headers.end() ? std::string() : it->second;
    };
    if (request.target != "/data") return reply.status = 404, reply;
    const auto t = transfers.find(header("x-reva-transfer"));
    if (t == transfers.end()) return reply.status = 403, reply;
    if (!use_token(header("x-access-token"), false)) return reply.status = 401, reply;
    const Transfer transfer = t->second;
    const std::string& rel = transfer.path;
    if (request.method == "GET" && !transfer.upload) {
      if (!is_file(rel)) return reply.status = 404, reply;
      Node& n = nodes[rel];
      if (processing(n)) {
        ++too_early;
        return reply.status = 425, reply;
      }
      std::ifstream in(disk(rel), std::ios::binary);
      reply.body.assign(std::istreambuf_iterator<char>(in), {});
      reply.headers.emplace_back("ETag", n.etag);
      reply.headers.emplace_back("OC-ETag", n.etag);
      return reply;
    }
    if (request.method != "PUT" || !transfer.upload) return reply.status = 405, reply;
    transfers.erase(t);  // one upload per session
    if (request.body.empty()) return reply.status = 400, reply;
    if (!is_dir(parent(rel))) return reply.status = 404, reply;
    const bool exists = is_file(rel);
    if (transfer.existed) {
      if (!exists) return reply.status = 404, reply;
      Node& n = nodes[rel];
      if (!transfer.if_match.empty() && n.etag != transfer.if_match)
        return reply.status = 412, reply;
      switch (check_lock(n, transfer.lock_id)) {
        case rpc::CODE_OK:
          break;
        case rpc::CODE_LOCKED:
          return reply.status = 423, reply;
        default:
          return reply.status = 412, reply;
      }
    } else if (exists) {
      return reply.status = 412, reply;  // exclusive creation lost
    }
    write_file(rel, request.body);
    reply.headers.emplace_back("ETag", nodes[rel].etag);
    reply.headers.emplace_back("OC-ETag", nodes[rel].etag);
    return reply;
  }
};

GatewayDouble::GatewayDouble(GatewayDoubleOptions options) : state_(std::make_unique<State>()) {
  State& s = *state_;
  s.options = std::move(options);
  if (s.options.root.empty()) {
    std::string tmpl = (fs::temp_directory_path() / "cs3-double.XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("cs3 double: mkdtemp failed");
    s.options.root = tmpl;
    s.own_root = true;
  }
  s.space_dir = s.options.root / s.options.space_id;
  fs::create_directories(s.space_dir);

  // HTTP data endpoint.
  s.http =
      std::make_unique<HttpServer>("cs3 double: HTTP data endpoint", [&s](const HttpRequest& r) {
        if (s.options.before_transfer) s.options.before_transfer(r.method);
        return s.handle(r);
      });

  // gRPC gateway.
  grpc::ServerBuilder builder;
  std::shared_ptr<grpc::ServerCredentials> credentials = grpc::InsecureServerCredentials();
  if (!s.options.tls_cert_pem.empty()) {
    grpc::SslServerCredentialsOptions ssl;
    ssl.pem_key_cert_pairs.push_back({s.options.tls_key_pem, s.options.tls_cert_pem});
    credentials = grpc::SslServerCredentials(ssl);
  }
  builder.AddListeningPort("127.0.0.1:0", credentials, &s.grpc_port);
  builder.RegisterService(&s);
  builder.SetMaxReceiveMessageSize(16 << 20);
  s.server = builder.BuildAndStart();
  if (!s.server || s.grpc_port == 0) throw std::runtime_error("cs3 double: gRPC server failed");
}

GatewayDouble::~GatewayDouble() {
  State& s = *state_;
  stop_grpc();
  s.http.reset();  // stops and joins its threads
  if (s.own_root) {
    std::error_code ec;
    fs::remove_all(s.options.root, ec);
  }
}

int GatewayDouble::grpc_port() const { return state_->grpc_port; }
int GatewayDouble::http_port() const { return state_->http->port(); }
int GatewayDouble::http_connections() const { return state_->http->connections(); }
std::string GatewayDouble::space() const {
  return state_->options.storage_id + "$" + state_->options.space_id;
}
const GatewayDoubleOptions& GatewayDouble::options() const { return state_->options; }
fs::path GatewayDouble::files() const { return state_->space_dir; }

void GatewayDouble::advance(std::chrono::nanoseconds d) {
  std::lock_guard lock(state_->mu);
  state_->offset += d;
}
void GatewayDouble::expire_tokens() {
  std::lock_guard lock(state_->mu);
  state_->tokens.clear();
}
void GatewayDouble::set_token_calls(int calls) {
  std::lock_guard lock(state_->mu);
  state_->options.token_calls = calls;
}
void GatewayDouble::set_too_early(std::chrono::milliseconds window) {
  std::lock_guard lock(state_->mu);
  state_->options.too_early = window;
}
void GatewayDouble::stop_grpc() {
  if (state_->grpc_stopped.exchange(true)) return;
  state_->server->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(200));
  state_->server->Wait();
}
int GatewayDouble::authentications() const {
  std::lock_guard lock(state_->mu);
  return state_->authentications;
}
int GatewayDouble::unauthenticated_answers() const {
  std::lock_guard lock(state_->mu);
  return state_->unauthenticated;
}
int GatewayDouble::too_early_answers() const {
  std::lock_guard lock(state_->mu);
  return state_->too_early;
}
std::vector<std::string> GatewayDouble::tokens_issued() const {
  std::lock_guard lock(state_->mu);
  return state_->issued;
}

}  // namespace instance::testing
