// The etcd store: documents, conditional writes and native leases over the
// etcd v3 JSON gateway (see include/instance/stores/etcd.hpp).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <fstream>
#include <mutex>
#include <span>

#include <nlohmann/json.hpp>

#include "codec.hpp"
#include "instance/sdk/attempts.hpp"
#include "instance/sdk/credentials.hpp"  // printable
#include "instance/sdk/timeouts.hpp"
#include "instance/stores/etcd.hpp"
#include "net/errors.hpp"
#include "net/http.hpp"
#include "net/http_date.hpp"

namespace instance {
namespace {

using json = nlohmann::json;

constexpr std::size_t kMaxDocumentReply = std::size_t{4} << 20;  // one value, base64
constexpr std::size_t kMaxListReply = std::size_t{64} << 20;     // keys only
constexpr std::size_t kMaxSmallReply = std::size_t{1} << 20;     // leases, deletes, auth
// Range requests per transaction in get_many (etcd's --max-txn-ops: 128).
constexpr std::size_t kMaxTxnReads = 64;
// A watch's longest wait in one request (await_change): how soon it sees a stop.
constexpr Duration kWatchSlice = std::chrono::milliseconds(200);
// The shortest watch worth opening.
constexpr Duration kWatchFloor = std::chrono::milliseconds(50);

// A failed request, sorted: the attempt's failure (what to tell, whether a
// retry may cure it, whether the server may have carried it out anyway) and
// the gateway's own error when it sent one.
struct Classified {
  net::AttemptError failure;
  std::optional<etcd::GatewayError> gateway;
};

// A gateway error inside a 200 reply: a streaming call (lease keep-alive)
// reports failures as {"error": {"grpc_code": N, "message": ...}}.
std::optional<etcd::GatewayError> stream_error(const json& body) {
  const auto it = body.find("error");
  if (it == body.end() || !it->is_object()) return std::nullopt;
  etcd::GatewayError out;
  const int code = it->value("grpc_code", 2);
  out.code = code >= 0 && code <= 16 ? static_cast<etcd::Grpc>(code) : etcd::Grpc::unknown;
  out.message = it->value("message", "");
  return out;
}

// Parses a reply body; a streaming reply may hold several objects, one per
// line: the first one is the answer to our single request.
std::optional<json> parse_reply(std::string_view body) {
  auto j = json::parse(body.begin(), body.end(), nullptr, false);
  if (j.is_discarded()) {
    const auto nl = body.find('\n');
    if (nl == std::string_view::npos) return std::nullopt;
    j = json::parse(body.begin(), body.begin() + static_cast<std::ptrdiff_t>(nl), nullptr, false);
  }
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  return j;
}

Classified classify(const net::Response& reply, const std::string& what) {
  Classified c;
  net::AttemptError& f = c.failure;
  if (!reply.transport_ok()) {
    f.error = net::make_error(what, reply);
    f.retryable = net::transport_retryable(reply.curl);
    f.may_have_applied = f.retryable && net::transport_may_have_applied(reply.curl);
    return c;
  }
  if (auto g = etcd::parse_gateway_error(reply.body)) {
    std::string message =
        what + ": " + (g->message.empty() ? "HTTP " + std::to_string(reply.status) : g->message);
    const Errc code = etcd::map_grpc(*g);
    if (code == Errc::permission) {
      message +=
          "; check the etcd user and password (--user and --password-file, or "
          "INSTANCE_GUARD_USER and INSTANCE_GUARD_PASSWORD) and the user's role";
    } else if (code == Errc::no_space) {
      message += "; the etcd database is over its quota (compact and defragment it)";
    }
    f.error = Error{code, std::move(message)};
    f.retryable = etcd::is_retryable(*g);
    f.may_have_applied = f.retryable;  // a proposal that timed out may still commit
    c.gateway = std::move(*g);
    return c;
  }
  f.error = net::make_error(what, reply);
  if (reply.status == 404) {
    f.error.code = Errc::unsupported;
    f.error.message += " (no etcd v3 gateway at /v3/: etcd 3.4 or later is needed)";
  }
  f.retryable = net::status_retryable(reply.status);
  f.may_have_applied = net::status_may_have_applied(reply.status);
  return c;
}

struct LockToken {
  std::int64_t lease = 0;
  std::int64_t revision = 0;
};

std::optional<LockToken> parse_token(std::string_view token) {
  const auto colon = token.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  const auto lease = etcd::parse_revision(token.substr(0, colon));
  const auto revision = etcd::parse_revision(token.substr(colon + 1));
  if (!lease || !revision) return std::nullopt;
  return LockToken{*lease, *revision};
}

json compare_create_absent(const std::string& key) {
  return {{"key", etcd::base64_encode(key)},
          {"target", "CREATE"},
          {"result", "EQUAL"},
          {"create_revision", "0"}};
}

json compare_create(const std::string& key, std::int64_t revision) {
  return {{"key", etcd::base64_encode(key)},
          {"target", "CREATE"},
          {"result", "EQUAL"},
          {"create_revision", std::to_string(revision)}};
}

json compare_mod(const std::string& key, std::int64_t revision) {
  return {{"key", etcd::base64_encode(key)},
          {"target", "MOD"},
          {"result", "EQUAL"},
          {"mod_revision", std::to_string(revision)}};
}

json put_op(const std::string& key, std::string_view value, std::int64_t lease = 0) {
  json put = {{"key", etcd::base64_encode(key)}, {"value", etcd::base64_encode(value)}};
  if (lease != 0) put["lease"] = std::to_string(lease);
  return {{"request_put", std::move(put)}};
}

json range_op(const std::string& key, bool keys_only = false) {
  json range = {{"key", etcd::base64_encode(key)}};
  if (keys_only) range["keys_only"] = true;
  return {{"request_range", std::move(range)}};
}

// Every key that starts with `start`.
json prefix_range(const std::string& start) {
  return {{"key", etcd::base64_encode(start)},
          {"range_end", etcd::base64_encode(etcd::prefix_range_end(start))}};
}

json delete_op(const std::string& key) {
  return {{"request_delete_range", {{"key", etcd::base64_encode(key)}}}};
}

class EtcdStore final : public Store {
 public:
  EtcdStore(EtcdStoreOptions options, net::ClientOptions client_options,
            std::unique_ptr<net::Client> http, std::string shown)
      : options_(std::move(options)),
        client_options_(std::move(client_options)),
        http_(std::move(http)),
        shown_(std::move(shown)),
        timeouts_({.retry_deadline = options_.retry_deadline,
                   .request_timeout = options_.request_timeout,
                   .max_clock_skew = options_.max_clock_skew}) {}

  std::string describe() const override { return shown_; }

  void tune(const StoreTiming& timing) override {
    timeouts_.tune(timing, options_.logger ? *options_.logger : *null_logger(), shown_);
  }

  Capabilities capabilities() override {
    return {.versions = true,
            .conditional_writes = true,
            .native_lease = true,
            .server_clock = true,
            .batch_reads = true,
            .prefix_reads = true,
            .atomic_lease = true,
            .agreement = agreement()};
  }

  Result<Document> get(const Key& key) override {
    const std::string what = "etcd get " + key.str() + " at " + shown_;
    if (key.empty()) return fail(Errc::invalid, what + ": the root is not a document");
    auto reply =
        call(what, "/v3/kv/range", {{"key", etcd::base64_encode(doc_key(key))}}, kMaxDocumentReply);
    if (!reply) return std::unexpected(reply.error());
    auto kv = first_kv(reply->body, what);
    if (!kv) return std::unexpected(kv.error());
    if (!*kv) return fail(Errc::not_found, what + ": not found");
    return document(**kv, what);
  }

  // One transaction of range requests, no compare (kMaxTxnReads of them
  // each: etcd's --max-txn-ops is 128 by default): one round trip per
  // kMaxTxnReads keys, every answer read at the same revision.
  Result<std::vector<Result<Document>>> get_many(std::span<const Key> keys) override {
    std::vector<Result<Document>> out;
    out.reserve(keys.size());
    for (std::size_t at = 0; at < keys.size(); at += kMaxTxnReads) {
      const auto batch = keys.subspan(at, std::min(kMaxTxnReads, keys.size() - at));
      const std::string what =
          "etcd get " + batch.front().str() +
          (batch.size() > 1 ? " and " + std::to_string(batch.size() - 1) + " more"
                            : std::string()) +
          " at " + shown_;
      json ranges = json::array();
      for (const Key& key : batch) {
        if (key.empty()) return fail(Errc::invalid, what + ": the root is not a document");
        ranges.push_back(range_op(doc_key(key)));
      }
      const json body = {{"success", std::move(ranges)}};
      auto reply = call(what, "/v3/kv/txn", body, kMaxListReply);
      if (!reply && reply.error().message.find("too many operations") != std::string::npos) {
        // A cluster whose --max-txn-ops is below kMaxTxnReads: one by one.
        for (const Key& key : batch) {
          auto doc = get(key);
          if (!doc && doc.error().code != Errc::not_found && doc.error().code != Errc::malformed) {
            return std::unexpected(doc.error());
          }
          out.push_back(std::move(doc));
        }
        continue;
      }
      if (!reply) return std::unexpected(reply.error());
      for (std::size_t i = 0; i < batch.size(); ++i) {
        const std::string one = "etcd get " + batch[i].str() + " at " + shown_;
        const json* range = reply->body.value("succeeded", false)
                                ? txn_range(reply->body, i, batch.size())
                                : nullptr;
        if (range == nullptr) {
          return fail(Errc::malformed, what + ": the reply does not hold one range per key read");
        }
        auto kv = first_kv(*range, one);
        if (!kv) return std::unexpected(kv.error());
        if (!*kv) {
          out.push_back(fail(Errc::not_found, one + ": not found"));
        } else if (kv_key(**kv) != doc_key(batch[i])) {
          return fail(Errc::malformed, what + ": an answer holds another key");
        } else {
          out.push_back(document(**kv, one));
        }
      }
    }
    return out;
  }

  Result<std::string> create(const Key& key, std::string_view data) override {
    const std::string what = "etcd create " + key.str() + " at " + shown_;
    if (auto bad = check_write(key, data, what); !bad) return std::unexpected(bad.error());
    const std::string k = doc_key(key);
    auto reply = txn(what, compare_create_absent(k), put_op(k, data), range_op(k));
    if (!reply) return std::unexpected(reply.error());
    if (reply->succeeded) return std::to_string(reply->revision);
    if (reply->kv && reply->maybe_applied) {
      // Our earlier attempt may have written it: exactly our bytes count as ours.
      if (auto doc = document(*reply->kv, what); doc && doc->data == data) return doc->version;
    }
    return fail(Errc::already_exists, what + ": the key exists");
  }

  Result<std::string> replace(const Key& key, std::string_view data) override {
    const std::string what = "etcd put " + key.str() + " at " + shown_;
    if (auto bad = check_write(key, data, what); !bad) return std::unexpected(bad.error());
    json body = put_op(doc_key(key), data)["request_put"];
    auto reply = call(what, "/v3/kv/put", body, kMaxSmallReply);
    if (!reply) return std::unexpected(reply.error());
    return revision_of(reply->body, what);
  }

  Result<void> remove(const Key& key) override {
    const std::string what = "etcd delete " + key.str() + " at " + shown_;
    if (key.empty()) return fail(Errc::invalid, what + ": the root is not a document");
    auto reply = call(what, "/v3/kv/deleterange", {{"key", etcd::base64_encode(doc_key(key))}},
                      kMaxSmallReply);
    if (!reply) return std::unexpected(reply.error());
    const auto deleted = etcd::int64_field(reply->body, "deleted");
    if (!deleted) return fail(Errc::malformed, what + ": the reply has no deleted count");
    if (*deleted == 0 && !reply->maybe_applied) return fail(Errc::not_found, what + ": not found");
    return {};
  }

  Result<std::vector<Key>> list(const Key& prefix) override {
    const std::string what =
        "etcd list " + (prefix.empty() ? std::string("/") : prefix.str()) + " at " + shown_;
    const std::string start = prefix_start(prefix);
    json body = prefix_range(start);
    body["keys_only"] = true;
    auto reply = call(what, "/v3/kv/range", body, kMaxListReply);
    if (!reply) return std::unexpected(reply.error());
    auto listed = listed_kvs(reply->body, start, what);
    if (!listed) return std::unexpected(listed.error());
    std::vector<Key> keys;
    keys.reserve(listed->size());
    for (auto& [key, kv] : *listed) keys.push_back(std::move(key));
    return keys;
  }

  // One range over the prefix, values included: every document at one
  // revision, in one round trip.
  Result<std::vector<std::pair<Key, Result<Document>>>> get_all(const Key& prefix) override {
    const std::string what = "etcd get all under " +
                             (prefix.empty() ? std::string("/") : prefix.str()) + " at " + shown_;
    const std::string start = prefix_start(prefix);
    auto reply = call(what, "/v3/kv/range", prefix_range(start), kMaxListReply);
    if (!reply) return std::unexpected(reply.error());
    auto listed = listed_kvs(reply->body, start, what);
    if (!listed) return std::unexpected(listed.error());
    std::vector<std::pair<Key, Result<Document>>> out;
    out.reserve(listed->size());
    for (auto& [key, kv] : *listed) {
      auto doc = document(*kv, "etcd get " + key.str() + " at " + shown_);
      out.emplace_back(std::move(key), std::move(doc));
    }
    return out;
  }

  Result<std::string> replace_if(const Key& key, std::string_view data,
                                 std::string_view version) override {
    const std::string what = "etcd conditional put " + key.str() + " at " + shown_;
    if (auto bad = check_write(key, data, what); !bad) return std::unexpected(bad.error());
    const auto revision = etcd::parse_revision(version);
    if (!revision) {
      return fail(Errc::conflict,
                  what + ": \"" + printable(version) + "\" is not a version of this store");
    }
    const std::string k = doc_key(key);
    auto reply = txn(what, compare_mod(k, *revision), put_op(k, data), range_op(k));
    if (!reply) return std::unexpected(reply.error());
    if (reply->succeeded) return std::to_string(reply->revision);
    if (!reply->kv) return fail(Errc::not_found, what + ": not found");
    if (reply->maybe_applied) {
      if (auto doc = document(*reply->kv, what); doc && doc->data == data) return doc->version;
    }
    return fail(Errc::conflict, what + ": the version is no longer " + std::to_string(*revision));
  }

  Result<void> remove_if(const Key& key, std::string_view version) override {
    const std::string what = "etcd conditional delete " + key.str() + " at " + shown_;
    if (key.empty()) return fail(Errc::invalid, what + ": the root is not a document");
    const auto revision = etcd::parse_revision(version);
    if (!revision) {
      return fail(Errc::conflict,
                  what + ": \"" + printable(version) + "\" is not a version of this store");
    }
    const std::string k = doc_key(key);
    auto reply = txn(what, compare_mod(k, *revision), delete_op(k), range_op(k));
    if (!reply) return std::unexpected(reply.error());
    if (reply->succeeded) return {};
    if (!reply->kv) {
      if (reply->maybe_applied) return {};  // our earlier attempt deleted it
      return fail(Errc::not_found, what + ": not found");
    }
    return fail(Errc::conflict, what + ": the version is no longer " + std::to_string(*revision));
  }

  Result<LockGrant> lock(const Key& key, Duration ttl, std::string_view owner) override {
    auto taken = take_lock(key, ttl, owner, nullptr);
    if (!taken) return std::unexpected(taken.error());
    return std::move(taken->grant);
  }

  Result<Duration> refresh_lock(const Key& key, std::string_view token, Duration) override {
    const std::string what = "etcd refresh lock " + key.str() + " at " + shown_;
    const auto t = parse_token(token);
    if (!t) return fail(Errc::invalid, what + ": not a lock token of this store");
    auto remaining = keep_alive(t->lease, what);
    if (!remaining) return std::unexpected(remaining.error());

    // The lease lives; the lock key must still be the one we put with it.
    auto reply =
        call(what, "/v3/kv/range", {{"key", etcd::base64_encode(lock_key(key))}}, kMaxSmallReply);
    if (!reply) return std::unexpected(reply.error());
    auto kv = first_kv(reply->body, what);
    if (!kv) return std::unexpected(kv.error());
    if (!*kv) return fail(Errc::not_found, what + ": the lock key was deleted");
    const auto lease = etcd::int64_field(**kv, "lease");
    const auto created = etcd::int64_field(**kv, "create_revision");
    if (!lease || !created || *lease != t->lease || *created != t->revision) {
      return fail(Errc::locked, what + ": the lock now belongs to another lease");
    }
    return Duration(std::chrono::seconds(*remaining));
  }

  // --wait's hand-over (Store::await_change). One transaction reads the
  // lock key and the document at `key` (keys only) and the revision; with
  // neither there, true at once. Otherwise a watch on the one present, from
  // the next revision, wakes us on its first event (the lock key deleted by
  // an unlock, a stand-down or the lease's expiry; the document removed or
  // rewritten), so a change between the read and the watch is never
  // missed. The watch runs on a client of its own, in slices of at most
  // kWatchSlice (each a new watch from the same revision), so a stop is
  // seen within one slice; a watch that fails is the error (the caller
  // polls).
  Result<bool> await_change(const Key& key, Duration timeout, std::stop_token stop) override {
    const std::string what = "etcd wait for a change of " + key.str() + " at " + shown_;
    if (key.empty()) return fail(Errc::invalid, what + ": the root key is not waited for");
    const std::string lock = lock_key(key);
    const std::string doc = doc_key(key);
    const json body = {{"success", json::array({range_op(lock, true), range_op(doc, true)})}};
    auto reply = call(what, "/v3/kv/txn", body, kMaxSmallReply);
    if (!reply) return std::unexpected(reply.error());
    auto revision = revision_of(reply->body, what);
    if (!revision) return std::unexpected(revision.error());
    const bool ran = reply->body.value("succeeded", false);
    const json* lock_range = ran ? txn_range(reply->body, 0, 2) : nullptr;
    const json* doc_range = ran ? txn_range(reply->body, 1, 2) : nullptr;
    if (lock_range == nullptr || doc_range == nullptr) {
      return fail(Errc::malformed, what + ": the reply does not hold the two ranges read");
    }
    auto held = first_kv(*lock_range, what);
    if (!held) return std::unexpected(held.error());
    auto present = first_kv(*doc_range, what);
    if (!present) return std::unexpected(present.error());
    if (!*held && !*present) return true;
    const std::string& watched = *held ? lock : doc;
    const std::int64_t from = *etcd::parse_revision(*revision) + 1;
    const MonoTime until = options_.clock->monotonic() + timeout;
    while (!stop.stop_requested()) {
      // Too little left to open a watch in: the wait is over (early by
      // less than kWatchFloor; the caller then claims or waits again).
      const Duration left = until - options_.clock->monotonic();
      if (left < kWatchFloor) return false;
      auto event = watch(watched, from, std::min<Duration>(left, kWatchSlice), what);
      if (!event) return std::unexpected(event.error());
      if (*event) return true;
    }
    return false;
  }

  Result<void> unlock(const Key& key, std::string_view token) override {
    const std::string what = "etcd unlock " + key.str() + " at " + shown_;
    const auto t = parse_token(token);
    if (!t) return fail(Errc::invalid, what + ": not a lock token of this store");
    auto reply = call(what + " (lease revoke)", "/v3/lease/revoke",
                      {{"ID", std::to_string(t->lease)}}, kMaxSmallReply);
    if (!reply) {
      if (reply.error().code == Errc::not_found) {
        return fail(Errc::not_found, what + ": the lease had already expired");
      }
      return std::unexpected(reply.error());
    }
    return {};
  }

  // The lease operations (atomic_lease), in as few requests as etcd's API
  // allows (docs/etcd.md): a lease must be granted before a transaction can
  // put a key with it, and a lease is kept alive only by its own keep-alive
  // call, so a claim is a grant and two transactions, a renewal a
  // keep-alive and one transaction, a stand-down one transaction.
  //
  // claim_lease: the grant; one transaction puts the lock key with the lease
  // when it is absent and reads the lease document; a second, only while
  // the lock key is still the one we put (its create revision), writes the
  // lease document with the epoch and our record and reads every record
  // back. The epoch is known only once the lock's put has a revision (the
  // first transaction's), so the two writes cannot share its request.
  Result<LeaseClaimed> claim_lease(const LeaseClaim& c) override {
    const std::string what = "etcd claim lease " + c.lock.str() + " at " + shown_;
    if (c.lease.empty() || c.record.empty() || c.scan.empty()) {
      return fail(Errc::invalid, what + ": the root is not a document");
    }
    if (c.record_data.size() > kMaxDocumentSize) {
      return fail(Errc::invalid, what + ": the record is larger than 1 MiB");
    }
    const std::string lease_key = doc_key(c.lease);
    auto taken = take_lock(c.lock, c.ttl, c.owner, &lease_key);
    if (!taken) return std::unexpected(taken.error());
    LeaseClaimed out{.grant = std::move(taken->grant)};
    // The lease as asked: etcd grants whole seconds, and sometimes more
    // than asked (its minimum TTL); LockGrant::granted says which.
    if (out.grant.granted == c.ttl) out.grant.granted = Duration::zero();
    if (taken->also_read) {
      out.previous = *taken->also_read ? document(**taken->also_read,
                                                  "etcd get " + c.lease.str() + " at " + shown_)
                                       : fail(Errc::not_found, "no lease document");
    } else {
      out.previous = get(c.lease);  // our earlier attempt took the lock: not read with it
    }
    std::uint64_t epoch = 1;
    if (out.previous) {
      const auto counted = lease_epoch(out.previous->data);
      if (!counted) return out;  // the caller decides on what it cannot read
      epoch = *counted + 1;
    } else if (out.previous.error().code != Errc::not_found) {
      return out;
    }
    epoch = std::max(epoch, out.grant.epoch);

    const auto t = parse_token(out.grant.token);
    const std::string lock = lock_key(c.lock);
    const std::string scan = doc_key(c.scan) + "/";
    const std::string record = doc_key(c.record);
    const json body = {
        {"compare", json::array({compare_create(lock, t->revision)})},
        {"success", json::array({put_op(lease_key, c.document.fill(epoch, out.grant.token)),
                                 put_op(record, c.record_data),
                                 {{"request_range", prefix_range(scan)}}})},
        {"failure", json::array({range_op(lock)})}};
    auto written = call(what, "/v3/kv/txn", body, kMaxListReply);
    if (!written) {
      revoke_quietly(t->lease);
      return std::unexpected(written.error());
    }
    if (!written->body.value("succeeded", false)) {
      revoke_quietly(t->lease);
      return fail(Errc::locked,
                  what +
                      ": the lock ended before its lease could be written, and may be held "
                      "by another instance now");
    }
    auto revision = revision_of(written->body, what);
    if (!revision) return std::unexpected(revision.error());
    const json* range = txn_range(written->body, 2, 3);
    if (range == nullptr) {
      return fail(Errc::malformed, what + ": the reply does not hold the records read back");
    }
    auto listed = listed_kvs(*range, scan, what);
    if (!listed) return std::unexpected(listed.error());
    for (auto& [key, kv] : *listed) {
      if (key == c.record) continue;
      auto doc = document(*kv, "etcd get " + key.str() + " at " + shown_);
      out.scanned.emplace_back(std::move(key), std::move(doc));
    }
    out.written = true;
    out.epoch = epoch;
    out.lease_version = *revision;
    out.record_version = *revision;
    return out;
  }

  // renew_lease: the keep-alive, then one transaction that rewrites the
  // lease document and our record while the lock key is still the one we
  // put (its create revision).
  Result<LeaseRenewed> renew_lease(const LeaseRenewal& r) override {
    const std::string what = "etcd renew lease " + r.lock.str() + " at " + shown_;
    const auto t = parse_token(r.token);
    if (!t) return fail(Errc::invalid, what + ": not a lock token of this store");
    for (const std::string* data : {&r.lease_data, &r.record_data}) {
      if (data->size() > kMaxDocumentSize) {
        return fail(Errc::invalid, what + ": the document is larger than 1 MiB");
      }
    }
    auto remaining = keep_alive(t->lease, what);
    if (!remaining) return std::unexpected(remaining.error());
    const std::string lock = lock_key(r.lock);
    const json body = {{"compare", json::array({compare_create(lock, t->revision)})},
                       {"success", json::array({put_op(doc_key(r.lease), r.lease_data),
                                                put_op(doc_key(r.record), r.record_data)})},
                       {"failure", json::array({range_op(lock)})}};
    auto reply = call(what, "/v3/kv/txn", body, kMaxSmallReply);
    if (!reply) return std::unexpected(reply.error());
    if (!reply->body.value("succeeded", false)) {
      auto held = failed_range(reply->body, what);
      if (!held) return std::unexpected(held.error());
      if (!*held) return fail(Errc::not_found, what + ": the lock key was deleted");
      return fail(Errc::locked, what + ": the lock now belongs to another lease");
    }
    auto revision = revision_of(reply->body, what);
    if (!revision) return std::unexpected(revision.error());
    const Duration granted = std::chrono::seconds(*remaining);
    return LeaseRenewed{.granted = granted == r.ttl ? Duration::zero() : granted,
                        .written = true,
                        .lease_version = *revision,
                        .record_version = *revision};
  }

  // end_lease: one transaction removes our record and, while the lock key
  // is the one we put, writes the lease document and deletes that key (a
  // lock that is no longer ours has nothing more to end). The lease itself,
  // holding no key now, expires on its own (its revoke would be a second
  // request).
  Result<bool> end_lease(const LeaseEnd& e) override {
    const std::string what = "etcd end lease " + e.lock.str() + " at " + shown_;
    const auto t = parse_token(e.token);
    if (!t) return fail(Errc::invalid, what + ": not a lock token of this store");
    if (e.lease_data.size() > kMaxDocumentSize) {
      return fail(Errc::invalid, what + ": the lease document is larger than 1 MiB");
    }
    const std::string lock = lock_key(e.lock);
    const json body = {
        {"compare", json::array({compare_create(lock, t->revision)})},
        {"success", json::array({delete_op(doc_key(e.record)),
                                 put_op(doc_key(e.lease), e.lease_data), delete_op(lock)})},
        {"failure", json::array({delete_op(doc_key(e.record))})}};
    auto reply = call(what, "/v3/kv/txn", body, kMaxSmallReply);
    if (!reply) return std::unexpected(reply.error());
    return true;
  }

 private:
  struct Reply {
    json body;
    bool maybe_applied = false;  // an earlier attempt of this call may have been carried out
  };
  struct TxnReply {
    bool succeeded = false;
    std::int64_t revision = 0;  // the store's revision after the txn
    std::optional<json> kv;     // the failure branch's range: the key as it is
    bool maybe_applied = false;
  };

  // A lock taken: the grant, and what the transaction that took it read of
  // `also_read` (nullopt inside: absent), when it was read with it (not
  // when the lock was found taken by our own earlier attempt).
  struct Taken {
    LockGrant grant;
    std::optional<std::optional<json>> also_read;
  };

  // The lease grant, then one transaction: the lock key put with the lease
  // when it is absent (and `also_read` read), else the key read to name
  // its holder.
  Result<Taken> take_lock(const Key& key, Duration ttl, std::string_view owner,
                          const std::string* also_read) {
    const std::string what = "etcd lock " + key.str() + " at " + shown_;
    if (key.empty()) return fail(Errc::invalid, what + ": the root cannot be locked");
    const auto seconds = std::max<std::int64_t>(
        1, static_cast<std::int64_t>(std::ceil(std::chrono::duration<double>(ttl).count())));
    auto granted =
        call(what + " (lease grant)", "/v3/lease/grant", {{"TTL", seconds}}, kMaxSmallReply);
    if (!granted) return std::unexpected(granted.error());
    const auto lease = etcd::int64_field(granted->body, "ID");
    if (!lease || *lease <= 0) return fail(Errc::malformed, what + ": the grant has no lease ID");
    // etcd may grant more than asked (its minimum lease TTL).
    const auto ttl_granted = etcd::int64_field(granted->body, "TTL");
    const Duration grant =
        std::chrono::seconds(ttl_granted && *ttl_granted > 0 ? *ttl_granted : seconds);

    const std::string k = lock_key(key);
    json success = json::array({put_op(k, owner, *lease)});
    if (also_read) success.push_back(range_op(*also_read));
    const json body = {{"compare", json::array({compare_create_absent(k)})},
                       {"success", std::move(success)},
                       {"failure", json::array({range_op(k)})}};
    auto reply = call(what, "/v3/kv/txn", body, kMaxDocumentReply);
    if (!reply) {
      revoke_quietly(*lease);
      return std::unexpected(reply.error());
    }
    // The epoch: the revision of the lock's put, greater than every
    // earlier lock's of the key.
    auto taken = [&](std::int64_t revision) {
      return Taken{.grant =
                       LockGrant{.token = std::to_string(*lease) + ":" + std::to_string(revision),
                                 .epoch = static_cast<std::uint64_t>(revision),
                                 .granted = grant}};
    };
    if (reply->body.value("succeeded", false)) {
      auto revision = revision_of(reply->body, what);
      if (!revision) return std::unexpected(revision.error());
      Taken out = taken(*etcd::parse_revision(*revision));
      if (also_read) {
        const json* range = txn_range(reply->body, 1, 2);
        if (range == nullptr) {
          revoke_quietly(*lease);
          return fail(Errc::malformed, what + ": the reply does not hold the document read");
        }
        auto kv = first_kv(*range, what);
        if (!kv) {
          revoke_quietly(*lease);
          return std::unexpected(kv.error());
        }
        out.also_read = std::move(*kv);
      }
      return out;
    }
    auto kv = failed_range(reply->body, what);
    if (!kv) return std::unexpected(kv.error());
    if (*kv) {
      const auto holder_lease = etcd::int64_field(**kv, "lease");
      if (holder_lease && *holder_lease == *lease) {  // our earlier attempt took it
        const auto created = etcd::int64_field(**kv, "create_revision");
        if (created && *created > 0) return taken(*created);
      }
    }
    revoke_quietly(*lease);
    std::string holder;
    if (*kv) {
      if (auto doc = document(**kv, what); doc) holder = printable(doc->data);
    }
    return fail(Errc::locked, what + ": held by another owner" +
                                  (holder.empty() ? std::string() : " (" + holder + ")"));
  }

  // One keep-alive of `lease`: the TTL it has again; Errc::not_found when it
  // had expired.
  Result<std::int64_t> keep_alive(std::int64_t lease, const std::string& what) {
    auto kept = call(what + " (lease keep-alive)", "/v3/lease/keepalive",
                     {{"ID", std::to_string(lease)}}, kMaxSmallReply);
    if (!kept) return std::unexpected(kept.error());
    const auto result = kept->body.find("result");
    const auto remaining = result != kept->body.end() ? etcd::int64_field(*result, "TTL")
                                                      : std::optional<std::int64_t>{};
    if (!remaining) return fail(Errc::malformed, what + ": the keep-alive reply has no result");
    if (*remaining <= 0) return fail(Errc::not_found, what + ": the lease has expired");
    return *remaining;
  }

  // The failure branch's range of a transaction that did not succeed: the
  // key as it is (nullopt: absent).
  static Result<std::optional<json>> failed_range(const json& body, const std::string& what) {
    const json* range = txn_range(body, 0, 0);
    if (range == nullptr) return fail(Errc::malformed, what + ": the failed txn returned no range");
    return first_kv(*range, what);
  }

  // The range answer at `index` of a transaction's reply, which must hold
  // `count` answers (0: any number); nullptr when it does not.
  static const json* txn_range(const json& body, std::size_t index, std::size_t count) {
    const auto responses = body.find("responses");
    if (responses == body.end() || !responses->is_array() || responses->size() <= index ||
        (count != 0 && responses->size() != count)) {
      return nullptr;
    }
    const json& response = (*responses)[index];
    const auto range = response.is_object() ? response.find("response_range") : response.end();
    return range != response.end() && range->is_object() ? &*range : nullptr;
  }

  // A kv's key, decoded; nullopt when it has none that decodes.
  static std::optional<std::string> kv_key(const json& kv) {
    const auto k = kv.is_object() ? kv.find("key") : kv.end();
    if (k == kv.end() || !k->is_string()) return std::nullopt;
    return etcd::base64_decode(k->get_ref<const std::string&>());
  }

  // The kvs of a range reply over every key under `start` (a prefix ending
  // in '/'), each with its key as a Key under the store's prefix; malformed
  // when one lies outside the range or cannot be a key.
  Result<std::vector<std::pair<Key, const json*>>> listed_kvs(const json& range,
                                                              const std::string& start,
                                                              const std::string& what) const {
    std::vector<std::pair<Key, const json*>> out;
    const auto kvs = range.find("kvs");
    if (kvs == range.end()) return out;
    if (!kvs->is_array()) return fail(Errc::malformed, what + ": kvs is not an array");
    const std::size_t root = options_.prefix.size() + 1;
    out.reserve(kvs->size());
    for (const auto& kv : *kvs) {
      const auto raw = kv_key(kv);
      if (!raw || !raw->starts_with(start)) {
        return fail(Errc::malformed, what + ": the reply holds a key outside the range");
      }
      auto key = Key::from_listing(std::string_view(*raw).substr(root));
      if (!key || key->empty()) {
        return fail(Errc::malformed,
                    what + ": etcd key \"" + printable(*raw) +
                        "\" cannot be a key (an empty or dot segment, or a NUL byte)");
      }
      out.emplace_back(std::move(*key), &kv);
    }
    return out;
  }

  std::string doc_key(const Key& key) const { return options_.prefix + "/" + key.str(); }
  // Where the documents under `prefix` start: a range prefix ending in '/'.
  std::string prefix_start(const Key& prefix) const {
    return options_.prefix + "/" + (prefix.empty() ? std::string() : prefix.str() + "/");
  }
  std::string lock_key(const Key& key) const { return options_.prefix + "#lock/" + key.str(); }

  static Result<void> check_write(const Key& key, std::string_view data, const std::string& what) {
    if (key.empty()) return fail(Errc::invalid, what + ": the root is not a document");
    if (data.size() > kMaxDocumentSize) {
      return fail(Errc::invalid, what + ": the document is larger than 1 MiB");
    }
    return {};
  }

  // kvs[0] of a range reply: nullopt when the key is absent.
  static Result<std::optional<json>> first_kv(const json& range, const std::string& what) {
    const auto kvs = range.find("kvs");
    if (kvs == range.end()) return std::optional<json>{};
    if (!kvs->is_array()) return fail(Errc::malformed, what + ": kvs is not an array");
    if (kvs->empty()) return std::optional<json>{};
    if (!kvs->front().is_object()) return fail(Errc::malformed, what + ": a kv is not an object");
    return std::optional<json>{kvs->front()};
  }

  static Result<Document> document(const json& kv, const std::string& what) {
    std::optional<std::string> value = std::string();
    if (const auto v = kv.find("value"); v != kv.end()) {
      value = v->is_string() ? etcd::base64_decode(v->get_ref<const std::string&>()) : std::nullopt;
    }
    if (!value) return fail(Errc::malformed, what + ": the value is not base64");
    if (value->size() > kMaxDocumentSize) {
      return fail(Errc::malformed, what + ": the stored value is larger than 1 MiB");
    }
    const auto mod = etcd::int64_field(kv, "mod_revision");
    if (!mod || *mod <= 0) return fail(Errc::malformed, what + ": the kv has no mod_revision");
    return Document{std::move(*value), std::to_string(*mod)};
  }

  static Result<std::string> revision_of(const json& body, const std::string& what) {
    const auto header = body.find("header");
    const auto revision = header != body.end() ? etcd::int64_field(*header, "revision")
                                               : std::optional<std::int64_t>{};
    if (!revision || *revision <= 0) {
      return fail(Errc::malformed, what + ": the reply has no revision");
    }
    return std::to_string(*revision);
  }

  // One transaction: if `compare` then `success` else `failure` (a range).
  Result<TxnReply> txn(const std::string& what, json compare, json success, json failure) {
    const json body = {{"compare", json::array({std::move(compare)})},
                       {"success", json::array({std::move(success)})},
                       {"failure", json::array({std::move(failure)})}};
    auto reply = call(what, "/v3/kv/txn", body, kMaxDocumentReply);
    if (!reply) return std::unexpected(reply.error());
    TxnReply out;
    out.maybe_applied = reply->maybe_applied;
    out.succeeded = reply->body.value("succeeded", false);
    auto revision = revision_of(reply->body, what);
    if (!revision) return std::unexpected(revision.error());
    out.revision = *etcd::parse_revision(*revision);
    if (!out.succeeded) {
      auto kv = failed_range(reply->body, what);
      if (!kv) return std::unexpected(kv.error());
      out.kv = std::move(*kv);
    }
    return out;
  }

  void revoke_quietly(std::int64_t lease) {
    // Best effort: an orphaned lease expires on its own after its TTL.
    (void)call("etcd revoke an unused lease at " + shown_, "/v3/lease/revoke",
               {{"ID", std::to_string(lease)}}, kMaxSmallReply);
  }

  // The guarantee line's words for this cluster, from its member list (asked
  // once: one attempt per endpoint, 1 s each at most, until one answers),
  // or from the store URL when no member answered.
  std::string agreement() {
    std::lock_guard lock(topology_mu_);
    if (!topology_asked_) {
      topology_asked_ = true;
      members_ = member_count();
    }
    const std::size_t named = options_.endpoints.size();
    if (members_ == 1) {
      return "one etcd member, no replica: a claim lasts while that member answers";
    }
    if (members_ > 1) {
      return "etcd cluster (" + std::to_string(members_) + " members, " + std::to_string(named) +
             " in the store URL): a majority (" + std::to_string(members_ / 2 + 1) +
             ") must agree on every lock and renewal; without one the holder fences itself "
             "within its ttl";
    }
    if (named == 1) return std::string();
    return "etcd cluster (" + std::to_string(named) +
           " endpoints in the store URL; its size not learnt): a majority of its members must "
           "agree on every lock and renewal; without one the holder fences itself within its ttl";
  }

  // The cluster's voting members, 0 when no endpoint answered.
  std::size_t member_count() {
    const auto timeout = std::min(timeouts_.get().request_timeout, std::chrono::milliseconds(1000));
    for (std::size_t tried = 0; tried < options_.endpoints.size(); ++tried) {
      const std::size_t index = (current_.load() + tried) % options_.endpoints.size();
      const std::string& endpoint = options_.endpoints[index];
      auto auth = authorization(endpoint, timeout);
      if (!auth) continue;
      const auto reply =
          post(endpoint, "/v3/cluster/member/list", "{}", *auth, timeout, kMaxSmallReply);
      if (!reply.transport_ok() || reply.status != 200) continue;
      const auto j = parse_reply(reply.body);
      if (!j || !j->contains("members") || !(*j)["members"].is_array()) continue;
      // Learners (etcd 3.4) take no part in the vote.
      return static_cast<std::size_t>(std::ranges::count_if((*j)["members"], [](const json& m) {
        return !(m.is_object() && m.value("isLearner", false));
      }));
    }
    return 0;
  }

  bool uses_password() const { return options_.token.empty() && !options_.user.empty(); }

  // The Authorization value for the next request; logs in first when a
  // password is configured. On failure, the error says whether to retry.
  net::Attempt<std::string> authorization(const std::string& endpoint,
                                          std::chrono::milliseconds timeout) {
    if (!options_.token.empty()) return options_.token;
    if (!uses_password()) return std::string();
    std::lock_guard lock(auth_mu_);
    if (!token_.empty() || auth_disabled_) return token_;
    const std::string what = "etcd authenticate as " + printable(options_.user) + " at " + shown_;
    const std::string body = json{{"name", options_.user}, {"password", options_.password}}.dump();
    const auto reply = post(endpoint, "/v3/auth/authenticate", body, "", timeout, kMaxSmallReply);
    if (reply.transport_ok() && reply.status == 200) {
      const auto j = parse_reply(reply.body);
      if (!j || !j->contains("token") || !(*j)["token"].is_string() ||
          (*j)["token"].get_ref<const std::string&>().empty()) {
        return net::attempt_error(Errc::malformed, what + ": no token");
      }
      token_ = (*j)["token"].get<std::string>();
      return token_;
    }
    Classified c = classify(reply, what);
    if (c.gateway &&
        c.gateway->message.find("authentication is not enabled") != std::string::npos) {
      auth_disabled_ = true;
      if (options_.logger) {
        options_.logger->warn("etcd has authentication disabled; the credentials are not used",
                              {{"store", shown_}});
      }
      return std::string();
    }
    c.failure.may_have_applied = false;
    return std::unexpected(std::move(c.failure));
  }

  void forget_token(const std::string& used) {
    std::lock_guard lock(auth_mu_);
    if (token_ == used) token_.clear();
  }

  // POSTs `body` (JSON) to endpoint + path ("/v3/kv/range"), with
  // "Authorization: <authorization>" when that is not empty.
  net::Response post(const std::string& endpoint, std::string_view path, std::string_view body,
                     std::string_view authorization, std::chrono::milliseconds timeout,
                     std::size_t max_body) {
    net::Request request{.method = "POST",
                         .url = endpoint + std::string(path),
                         .headers = {"Content-Type: application/json"},
                         .body = body,
                         .has_body = true,
                         .max_body = max_body,
                         .timeout = timeout};
    if (!authorization.empty()) {
      request.headers.push_back("Authorization: " + std::string(authorization));
    }
    const WallTime sent_at = options_.clock->wall();
    net::Response reply = http_->perform(request);
    if (reply.transport_ok()) {
      date_check_.check(reply.header("Date"), sent_at, *options_.clock, timeouts_,
                        options_.logger ? *options_.logger : *null_logger(),
                        "the etcd server's clock and ours disagree by more than the allowed skew; "
                        "etcd's leases are judged on its clock, verify's records on ours: "
                        "synchronise the clocks (NTP)",
                        shown_);
    }
    return reply;
  }

  // One watch of `watched` from revision `from`, for at most `slice`, on
  // the endpoint that answered last: true on its first event, or when the
  // server cancelled it (compacted past `from`: something changed); false
  // when the slice ended without one. The gateway streams one JSON object
  // per line: first the watch's creation, then one per batch of events.
  Result<bool> watch(const std::string& watched, std::int64_t from, Duration slice,
                     const std::string& what) {
    const std::string& endpoint = options_.endpoints[current_.load() % options_.endpoints.size()];
    auto auth = authorization(endpoint, timeouts_.get().request_timeout);
    if (!auth) return std::unexpected(std::move(auth.error().error));
    const std::string payload =
        json{{"create_request",
              {{"key", etcd::base64_encode(watched)}, {"start_revision", std::to_string(from)}}}}
            .dump();
    bool changed = false;
    std::optional<Error> failed;
    std::string pending;  // the part of a line not ended yet
    net::Request request{.method = "POST",
                         .url = endpoint + "/v3/watch",
                         .headers = {"Content-Type: application/json"},
                         .body = payload,
                         .has_body = true,
                         .max_body = kMaxSmallReply,
                         .timeout = std::chrono::duration_cast<std::chrono::milliseconds>(slice)};
    if (!auth->empty()) request.headers.push_back("Authorization: " + *auth);
    request.on_data = [&](std::string_view chunk) {
      pending.append(chunk);
      for (auto end = pending.find('\n'); end != std::string::npos; end = pending.find('\n')) {
        const std::string line = pending.substr(0, end);
        pending.erase(0, end + 1);
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        const json message = json::parse(line, nullptr, false);
        if (!message.is_object()) {
          failed = Error{Errc::malformed, what + ": a watch message is not a JSON object"};
          return false;
        }
        if (auto g = stream_error(message)) {
          failed = Error{etcd::map_grpc(*g), what + ": " + g->message};
          return false;
        }
        const auto result = message.find("result");
        if (result == message.end() || !result->is_object()) continue;
        const auto events = result->find("events");
        if ((events != result->end() && events->is_array() && !events->empty()) ||
            result->value("canceled", false)) {
          changed = true;
          return false;
        }
      }
      if (pending.size() > kMaxSmallReply) {
        failed = Error{Errc::malformed, what + ": a watch message is larger than 1 MiB"};
        return false;
      }
      return true;
    };
    auto client = watch_client();
    if (!client) return std::unexpected(client.error());
    const net::Response reply = (*client)->perform(request);
    if (changed) return true;
    if (failed) return std::unexpected(std::move(*failed));
    // The slice's end: the stream was quiet, or not even open yet (a member
    // slow to answer under load: the read just before reached it). A member
    // that went away meanwhile costs this wait its length, then the claim
    // finds out.
    if (reply.curl == CURLE_OPERATION_TIMEDOUT) return false;
    if (reply.success()) return false;  // the server ended the stream: look again
    return std::unexpected(classify(reply, what).failure.error);
  }

  // The watches' client, beside http_ (whose requests a wait must not hold
  // up): made on the first wait, so a store that never waits has none.
  Result<net::Client*> watch_client() {
    std::lock_guard lock(watch_mu_);
    if (!watch_http_) {
      auto made = net::Client::create(client_options_);
      if (!made) return std::unexpected(made.error());
      watch_http_ = std::move(*made);
    }
    return watch_http_.get();
  }

  // Whether a failure is one another member may not share: no answer at
  // all, or an answer that this member cannot serve the request now (no
  // leader, not the leader, a timeout inside the cluster, a 5xx).
  static bool try_elsewhere(const net::Response& reply, const Classified& c) {
    if (!reply.transport_ok()) return true;
    if (c.gateway) return etcd::is_retryable(*c.gateway);
    return c.failure.retryable;
  }

  // Sends one request, retrying what a retry may cure until retry_deadline
  // (instance/sdk/attempts.hpp). Each attempt goes to the endpoint that
  // answered last; one that failed in a way another member may not share
  // moves the next attempt to the next endpoint. A simple token that
  // expired (5 minutes by default) or that this member does not know is
  // renewed once per attempt.
  Result<Reply> call(const std::string& what, std::string_view path, const json& body,
                     std::size_t max_body) {
    const std::string payload = body.dump();
    const StoreTimeouts timeouts = timeouts_.get();
    const net::Attempts how{.retry = {.initial_backoff = options_.initial_backoff,
                                      .max_backoff = options_.max_backoff,
                                      .deadline = timeouts.retry_deadline},
                            .request_timeout = timeouts.request_timeout};
    const std::size_t count = options_.endpoints.size();
    // What each endpoint said last in this operation, for the final error.
    std::vector<std::string> said(count);
    auto attempt = [&](const net::AttemptInfo& info) -> net::Attempt<json> {
      const std::size_t index = current_.load() % count;
      const std::string& endpoint = options_.endpoints[index];
      bool logged_in_again = false;
      while (true) {
        auto auth = authorization(endpoint, info.timeout);
        if (!auth) {
          note(said[index], auth.error().error.message, what);
          if (auth.error().retryable) move_on(index);
          return std::unexpected(std::move(auth.error()));
        }
        const auto reply = post(endpoint, path, payload, *auth, info.timeout, max_body);
        Classified c;
        if (reply.transport_ok() && reply.status == 200) {
          auto j = parse_reply(reply.body);
          if (!j)
            return net::attempt_error(Errc::malformed, what + ": the reply is not a JSON object");
          auto g = stream_error(*j);
          if (!g) return std::move(*j);
          const bool retryable = etcd::is_retryable(*g);
          c = Classified{.failure = {Error{etcd::map_grpc(*g), what + ": " + g->message}, retryable,
                                     retryable},
                         .gateway = g};
        } else {
          c = classify(reply, what);
        }
        if (c.gateway && c.gateway->code == etcd::Grpc::unauthenticated && uses_password() &&
            !logged_in_again) {
          logged_in_again = true;
          forget_token(*auth);
          continue;
        }
        note(said[index], c.failure.error.message, what);
        if (try_elsewhere(reply, c)) move_on(index);
        return std::unexpected(std::move(c.failure));
      }
    };
    auto done = net::run_until_done(how, *options_.clock, attempt);
    if (!done.result) {
      Error error = std::move(done.result.error().error);
      if (done.gave_up)
        error.message += " (gave up after " + std::to_string(done.attempts) + " attempts)";
      if (count > 1) error.message += endpoints_tried(said);
      return std::unexpected(std::move(error));
    }
    return Reply{std::move(*done.result), done.may_have_applied_before};
  }

  // The next attempt goes to the endpoint after `failed`, unless another
  // thread has moved on already.
  void move_on(std::size_t failed) {
    std::size_t expected = failed;
    if (options_.endpoints.size() > 1 &&
        current_.compare_exchange_strong(expected, (failed + 1) % options_.endpoints.size()) &&
        options_.logger) {
      options_.logger->debug(
          "etcd endpoint failed; trying the next one",
          {{"store", shown_},
           {"failed", options_.endpoints[failed]},
           {"next", options_.endpoints[(failed + 1) % options_.endpoints.size()]}});
    }
  }

  // Keeps an attempt's failure without the operation's own words in front.
  static void note(std::string& slot, std::string_view message, const std::string& what) {
    if (message.starts_with(what) && message.substr(what.size()).starts_with(": ")) {
      message.remove_prefix(what.size() + 2);
    }
    slot = std::string(message);
  }

  // "; endpoints tried: http://a:2379 (no reply ...), http://b:2379 (...);
  // not reached in time: http://c:2379"
  std::string endpoints_tried(const std::vector<std::string>& said) const {
    std::string tried;
    std::string untried;
    for (std::size_t i = 0; i < said.size(); ++i) {
      std::string& list = said[i].empty() ? untried : tried;
      list += (list.empty() ? "" : ", ") + options_.endpoints[i];
      if (!said[i].empty()) list += " (" + said[i] + ")";
    }
    std::string out;
    if (!tried.empty()) out += "; endpoints tried: " + tried;
    if (!untried.empty()) out += "; not reached in time: " + untried;
    return out;
  }

  EtcdStoreOptions options_;
  const net::ClientOptions client_options_;  // http_'s, and the watch client's
  std::unique_ptr<net::Client> http_;
  std::mutex watch_mu_;
  std::unique_ptr<net::Client>
      watch_http_;  // await_change's watches (watch_mu_), made on first use
  std::string shown_;
  TunedTimeouts timeouts_;           // retry_deadline, request_timeout, max_clock_skew (tune())
  net::ServerDateCheck date_check_;  // warns once about the server's clock
  std::mutex topology_mu_;
  bool topology_asked_ = false;  // guarded by topology_mu_
  std::size_t members_ = 0;      // the member list's size, 0 unknown; guarded by topology_mu_
  std::atomic<std::size_t> current_{0};  // the endpoint that answered last (or to try next)
  std::mutex auth_mu_;
  std::string token_;           // from /v3/auth/authenticate; guarded by auth_mu_
  bool auth_disabled_ = false;  // guarded by auth_mu_
};

bool valid_prefix(std::string_view prefix) {
  if (!prefix.starts_with('/') || prefix.ends_with('/')) return false;
  std::size_t i = 1;
  while (i <= prefix.size()) {
    const auto next = std::min(prefix.find('/', i), prefix.size());
    const auto segment = prefix.substr(i, next - i);
    if (segment.empty() || segment == "." || segment == "..") return false;
    for (unsigned char c : segment) {
      const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '.' || c == '_' || c == '~' || c == '-';
      if (!ok) return false;
    }
    i = next + 1;
  }
  return true;
}

}  // namespace

Result<std::shared_ptr<Store>> make_etcd_store(EtcdStoreOptions options) {
  if (options.endpoints.empty()) {
    return fail(Errc::invalid, "etcd: no endpoint given (http://host:port or https://host:port)");
  }
  const bool https = options.endpoints.front().starts_with("https://");
  std::string authorities;
  for (const std::string& endpoint : options.endpoints) {
    const bool this_https = endpoint.starts_with("https://");
    if (!this_https && !endpoint.starts_with("http://")) {
      return fail(Errc::invalid, "etcd endpoint " + redact_url(endpoint) +
                                     ": must start with http:// or https://");
    }
    if (this_https != https) {
      return fail(Errc::invalid, "etcd endpoint " + redact_url(endpoint) +
                                     ": every endpoint must use the same scheme (http or https)");
    }
    const auto authority = std::string_view(endpoint).substr(https ? 8 : 7);
    if (authority.empty() || authority.find_first_of("/?#@,") != std::string_view::npos ||
        std::ranges::any_of(authority, [](unsigned char c) { return c <= 0x20 || c >= 0x7F; })) {
      return fail(Errc::invalid, "etcd endpoint " + redact_url(endpoint) +
                                     ": must be scheme://host:port, without user, path or query");
    }
    authorities += (authorities.empty() ? "" : ",") + std::string(authority);
  }
  if (!valid_prefix(options.prefix)) {
    return fail(Errc::invalid,
                "etcd key prefix \"" + printable(options.prefix) +
                    "\": must be '/' and segments of [A-Za-z0-9._~-] (no '.' or '..', no "
                    "trailing '/')");
  }
  if (!options.token.empty() && !options.password.empty()) {
    return fail(Errc::invalid, "etcd: both a token and a password were given; give one");
  }
  if (!options.user.empty() && options.password.empty() && options.token.empty()) {
    return fail(Errc::invalid,
                "etcd: a user was given but no password (give --password-file or "
                "INSTANCE_GUARD_PASSWORD)");
  }
  if (!options.password.empty() && options.user.empty()) {
    return fail(Errc::invalid,
                "etcd: a password was given but no user (give --user or "
                "INSTANCE_GUARD_USER)");
  }
  net::TlsOptions tls;
  copy_tls_options(options, tls);
  if (auto ok = net::check_tls_files(tls); !ok) return std::unexpected(ok.error());
  if (options.insecure && options.logger) {
    options.logger->warn("TLS verification is off for the etcd store (--insecure)",
                         {{"store", authorities}});
  }
  if (!options.clock) options.clock = system_clock();
  net::ClientOptions client_options{.tls = tls, .connect_timeout = options.connect_timeout};
  auto http = net::Client::create(client_options);
  if (!http) return std::unexpected(http.error());
  std::string shown = (https ? "etcds://" : "etcd://") + authorities + options.prefix;
  return std::make_shared<EtcdStore>(std::move(options), std::move(client_options),
                                     std::move(*http), std::move(shown));
}

}  // namespace instance
