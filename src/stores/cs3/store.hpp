// The CS3 store's implementation class, shared by its source files:
//   gateway.cpp     the session (Authenticate, the space and its check),
//                   gRPC calls, the retry loop, the Date check
//   store.cpp       reads, writes, listing, folders, the probe, make_cs3_store
//   store_lock.cpp  native leases (SetLock / RefreshLock / Unlock) and
//                   remove_if (lock, compare, delete)
// The contract is in instance/stores/cs3.hpp.
#pragma once

#include <atomic>
#include <expected>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "cs3/gateway/v1beta1/gateway_api.grpc.pb.h"
#include "errors.hpp"
#include "instance/sdk/attempts.hpp"
#include "instance/sdk/concurrently.hpp"
#include "instance/sdk/credentials.hpp"  // printable
#include "instance/sdk/random.hpp"
#include "instance/sdk/timeouts.hpp"
#include "instance/stores/cs3.hpp"
#include "net/errors.hpp"
#include "net/http.hpp"
#include "net/http_date.hpp"

namespace instance::cs3 {

namespace gw = ::cs3::gateway::v1beta1;
namespace sp = ::cs3::storage::provider::v1beta1;
namespace rpc = ::cs3::rpc::v1beta1;

inline constexpr std::string_view kLockFolder = ".instance-guard-locks";
inline constexpr std::string_view kProbeFolder = ".instance-guard-probe";
inline constexpr std::string_view kAppName = "instance-guard";
inline constexpr std::size_t kMaxListingDepth = 32;
// Returned as the version of a write whose result someone else overwrote
// before we could learn its etag: a conditional write with it always fails.
inline constexpr std::string_view kSupersededVersion = "\"instance-guard:superseded\"";

// One attempt's failure (net::AttemptError): its message says what
// happened, without the operation, key or endpoint, which with_retries adds.
using net::Attempt;
using net::attempt_error;
using net::AttemptError;

// What every call needs: the access token and the space root.
struct Session {
  std::string token;
  sp::ResourceId root;
};

// A write's precondition.
struct Condition {
  enum Kind { none, absent, match } kind = none;
  std::string_view version;
};

// A version this store could have handed out: non-empty printable ASCII.
inline bool plausible_version(std::string_view version) {
  if (version.empty() || version.size() > 1024) return false;
  for (unsigned char c : version) {
    if (c < 0x20 || c >= 0x7F) return false;
  }
  return true;
}

class Cs3Store final : public Store {
 public:
  Cs3Store(Cs3StoreOptions options, std::string where, std::unique_ptr<gw::GatewayAPI::Stub> stub,
           std::unique_ptr<net::Client> data)
      : options_(std::move(options)),
        where_(std::move(where)),
        stub_(std::move(stub)),
        data_(std::move(data)),
        timeouts_({.retry_deadline = options_.retry_deadline,
                   .request_timeout = options_.call_timeout,
                   .max_clock_skew = options_.max_clock_skew}) {}

  std::string describe() const override { return where_; }
  void tune(const StoreTiming& timing) override {
    timeouts_.tune(timing, *options_.logger, where_);
  }
  Capabilities capabilities() override;
  Result<Document> get(const Key& key) override;
  // Each key as get() reads it, kConcurrentReads at a time (batch_reads):
  // the gRPC calls share the one channel, each transfer takes a data
  // gateway connection of its own.
  Result<std::vector<Result<Document>>> get_many(std::span<const Key> keys) override {
    return get_concurrently(*this, keys, kConcurrentReads);
  }
  Result<std::string> create(const Key& key, std::string_view data) override {
    return write("create", key, data, {Condition::absent, {}});
  }
  Result<std::string> replace(const Key& key, std::string_view data) override {
    return write("replace", key, data, {});
  }
  Result<void> remove(const Key& key) override;
  Result<std::vector<Key>> list(const Key& prefix) override;
  Result<std::string> replace_if(const Key& key, std::string_view data,
                                 std::string_view version) override;
  Result<void> remove_if(const Key& key, std::string_view version) override;
  Result<LockGrant> lock(const Key& key, Duration ttl, std::string_view owner) override;
  Result<Duration> refresh_lock(const Key& key, std::string_view token, Duration ttl) override;
  Result<void> unlock(const Key& key, std::string_view token) override;

 private:
  // ---- gateway.cpp
  // Authenticates and finds (and checks) the space, once; later calls reuse it.
  Attempt<Session> session();
  // Drops `token` (expired): the next session() authenticates again.
  void forget_token(const std::string& token);
  Attempt<std::string> authenticate_locked();
  Attempt<sp::ResourceId> find_space_locked(const std::string& token);
  Attempt<void> check_space_locked(const std::string& token, const sp::StorageSpace& space);
  void prepare(grpc::ClientContext& context, const std::string& token) const;
  std::unexpected<AttemptError> transport_failure(std::string_view method,
                                                  const grpc::Status& status);

  // One gateway call with the session's token, authenticating again once
  // when the gateway answers CODE_UNAUTHENTICATED. `fn(stub, context,
  // response, session)` sends it. Transport failures become an AttemptError; a
  // CS3 status other than OK is the caller's to read.
  template <class Response, class Fn>
  Attempt<Response> call(std::string_view method, Fn&& fn) {
    for (int round = 0;; ++round) {
      auto s = session();
      if (!s) return std::unexpected(std::move(s.error()));
      Response response;
      grpc::ClientContext context;
      prepare(context, s->token);
      count_rpc();
      const grpc::Status status = fn(*stub_, &context, &response, *s);
      if (!status.ok()) return transport_failure(method, status);
      if (response.status().code() == rpc::CODE_UNAUTHENTICATED && round == 0) {
        forget_token(s->token);
        continue;
      }
      return response;
    }
  }
  // The failure for a CS3 status other than OK.
  static std::unexpected<AttemptError> status_failure(std::string_view method,
                                                      const rpc::Status& status,
                                                      bool retry_locked = false);

  // Runs `attempt(maybe_applied_before)` until it succeeds, fails for good,
  // or retry_deadline passes; the error names op, key and endpoint.
  template <class T, class Fn>
  Result<T> with_retries(std::string_view op, const Key& key, Fn&& attempt) {
    const StoreTimeouts timeouts = timeouts_.get();
    const net::Attempts how{.retry = {.initial_backoff = options_.initial_backoff,
                                      .max_backoff = options_.max_backoff,
                                      .deadline = timeouts.retry_deadline},
                            .request_timeout = timeouts.request_timeout};
    const std::string at = what(op, key) + " at " + where_ + ": ";
    auto done = net::run_until_done(
        how, *options_.clock,
        [&](const net::AttemptInfo& info) -> Attempt<T> {
          Attempt<T> r = attempt(info.may_have_applied_before);
          if (!r) r.error().error.message = at + r.error().error.message;
          return r;
        },
        [&](const net::AttemptInfo&, std::string_view, Duration) {
          if (options_.stats) ++options_.stats->retries;
        });
    if (done.result) {
      if constexpr (std::is_void_v<T>) {
        return {};
      } else {
        return std::move(*done.result);
      }
    }
    Error& error = done.result.error().error;
    if (done.attempts > 1)
      error.message += " (after " + std::to_string(done.attempts) + " attempts)";
    return std::unexpected(std::move(error));
  }
  // The gateway clock check of a reply to a transfer sent at `sent_at`.
  void check_date(const std::string& date, WallTime sent_at);
  void count_rpc() {
    if (options_.stats) ++options_.stats->rpcs;
  }
  // ---- store.cpp
  Result<std::string> write(std::string_view op, const Key& key, std::string_view data,
                            Condition condition);
  Attempt<std::string> write_once(const std::string& path, std::string_view data,
                                  Condition condition, bool maybe_applied_before);
  Attempt<std::string> touch(const std::string& path, bool absent_only);
  // InitiateFileDownload + GET of `path`; nullopt when absent.
  Attempt<std::optional<Document>> fetch(const std::string& path);
  // Reads `path` back after a write that answered without an etag (or whose
  // answer was lost): the version when the bytes are still ours.
  Attempt<std::optional<std::string>> version_if_ours(const std::string& path,
                                                      std::string_view data);
  // CreateContainer for every folder from the store's folder down to the
  // parent of `path` (existing ones are fine).
  Attempt<void> make_parents(const std::string& path);
  Attempt<void> list_folder(const std::string& folder_path, const Key& folder, bool top,
                            std::size_t depth, std::vector<Key>& out);
  Attempt<void> remove_path(const std::string& path, std::string_view lock_id,
                            bool maybe_applied_before);
  // The probed capabilities (cached once known); the probe's error when the
  // gateway cannot be asked.
  Result<Capabilities> probed();
  Result<Capabilities> probe_locked();
  Result<void> require_conditional_writes(std::string_view op, const Key& key);
  Result<void> require_native_lease(std::string_view op, const Key& key);
  AttemptError http_failure(const net::Response& response, const std::string& token);
  // The ETag header of a transfer, or OC-ETag when there is none.
  static std::string etag_of(const net::Response& response);
  // One transfer on the data gateway: GET `url`, or PUT `body` when `put`,
  // with the transfer token (X-Reva-Transfer) and the access token
  // (x-access-token) as headers (printable ASCII, checked where they arrive).
  net::Response transfer(bool put, const std::string& url, std::string_view transfer_token,
                         std::string_view access_token, std::string_view body,
                         std::size_t max_body);

  // ---- store_lock.cpp
  Attempt<std::string> set_lock(const std::string& path, std::string_view lock_id, Duration ttl,
                                std::string_view owner);
  Attempt<void> release_lock(const std::string& path, std::string_view lock_id);
  Attempt<void> ensure_lock_resource(const std::string& path);
  // SetLock on the probe's scratch document, a second SetLock must be refused.
  bool probe_lock(const std::string& path);

  // Paths relative to the space root, always "./"-prefixed by ref().
  std::string path_of(const Key& key) const {
    return key.empty() ? options_.folder : options_.folder + "/" + key.str();
  }
  std::string lock_path_of(const Key& key) const {
    return options_.folder + "/" + std::string(kLockFolder) + "/" + key.str();
  }
  static sp::Reference ref(const Session& s, const std::string& path) {
    sp::Reference r;
    *r.mutable_resource_id() = s.root;
    r.set_path("./" + path);
    return r;
  }
  static std::string what(std::string_view op, const Key& key) {
    return key.empty() ? std::string(op) + " (the base folder)" : std::string(op) + " " + key.str();
  }
  Result<void> check_key(std::string_view op, const Key& key) const;

  const Cs3StoreOptions options_;
  const std::string where_;
  const std::unique_ptr<gw::GatewayAPI::Stub> stub_;
  const std::unique_ptr<net::Client> data_;  // the data gateway
  TunedTimeouts timeouts_;  // retry_deadline, call_timeout, max_clock_skew (tune())

  std::mutex session_mu_;
  std::string token_;                   // empty: authenticate first
  std::optional<sp::ResourceId> root_;  // empty: find the space first

  std::mutex probe_mu_;
  std::optional<Capabilities> capabilities_;

  std::mutex lock_resources_mu_;
  std::set<std::string> lock_resources_;  // lock documents known to exist

  net::ServerDateCheck date_check_;  // warns once about the gateway clock
};

}  // namespace instance::cs3
