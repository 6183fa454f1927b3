// The Redis store (contract in instance/stores/redis.hpp): key layout, the
// retry loop, reply decoding and error mapping.
#include <poll.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <mutex>
#include <optional>
#include <set>

#include "../stop_wake.hpp"
#include "connection.hpp"
#include "instance/sdk/attempts.hpp"
#include "instance/sdk/credentials.hpp"  // printable
#include "instance/sdk/random.hpp"
#include "instance/sdk/timeouts.hpp"
#include "instance/stores/redis.hpp"
#include "instance/time.hpp"
#include "scripts.hpp"

namespace instance {
namespace redis {
namespace {

using namespace std::chrono_literals;

// Redis glob (SCAN MATCH): '*', '?', '[', ']' and '\' are escaped.
std::string glob_escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

// Replies that mean "not now": the command did not run; try again.
bool transient(std::string_view error) {
  for (std::string_view word : {"LOADING", "BUSY", "TRYAGAIN", "MASTERDOWN"}) {
    if (error.starts_with(word) && (error.size() == word.size() || error[word.size()] == ' ')) {
      return true;
    }
  }
  return false;
}

std::string ttl_ms(Duration ttl) {
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(ttl).count();
  return std::to_string(std::max<std::int64_t>(1, ms));
}

class RedisStore final : public Store {
 public:
  explicit RedisStore(RedisStoreOptions options)
      : options_(std::move(options)),
        where_(describe_redis(options_)),
        log_(options_.logger ? options_.logger : null_logger()),
        doc_ns_(options_.prefix + "doc:"),
        lock_ns_(options_.prefix + "lock:"),
        epoch_ns_(options_.prefix + "epoch:"),
        // Pub/sub is not per database: the number keeps databases apart.
        change_ns_(options_.prefix + "changed:" + std::to_string(options_.db) + ":"),
        timeouts_({.retry_deadline = options_.retry_deadline,
                   .request_timeout = options_.command_timeout,
                   .max_clock_skew = options_.max_clock_skew}) {
    if (!options_.clock) options_.clock = system_clock();
  }

  std::string describe() const override { return where_; }

  void tune(const StoreTiming& timing) override { timeouts_.tune(timing, *log_, where_); }

  Capabilities capabilities() override {
    if (!probed_.load()) {
      // An unreachable server is asked again, but at most every 30 s: the
      // guard asks for capabilities on every claim and renewal.
      std::lock_guard lock(probe_mu_);
      const MonoTime now = options_.clock->monotonic();
      if (!probed_.load() && (!last_probe_ || now - *last_probe_ >= 30s)) {
        last_probe_ = now;
        if (probe()) probed_ = true;
      }
    }
    return {.versions = true,
            .conditional_writes = true,
            .native_lease = true,
            .server_clock = true,
            .batch_reads = true,
            .atomic_lease = true,
            .agreement = agreement()};
  }

  Result<Document> get(const Key& key) override {
    auto sent = eval("get", key, scripts::kGet, {doc_key(key)}, {std::to_string(kMaxDocumentSize)});
    if (!sent) return std::unexpected(sent.error());
    return document_of(key, *sent->reply);
  }

  // One script reads them all (kGetMany), in one round trip.
  Result<std::vector<Result<Document>>> get_many(std::span<const Key> keys) override {
    if (keys.empty()) return std::vector<Result<Document>>{};
    std::vector<std::string> names;
    names.reserve(keys.size());
    for (const Key& key : keys) names.push_back(doc_key(key));
    auto sent =
        eval("get", keys.front(), scripts::kGetMany, names, {std::to_string(kMaxDocumentSize)});
    if (!sent) return std::unexpected(sent.error());
    const redisReply& r = *sent->reply;
    if (type_of(r) != ReplyType::array || size_of(r) != keys.size()) {
      return bad_reply("get", keys.front(), r);
    }
    std::vector<Result<Document>> out;
    out.reserve(keys.size());
    for (std::size_t i = 0; i < keys.size(); ++i)
      out.push_back(document_of(keys[i], element(r, i)));
    return out;
  }

  // A kGet answer (or one of kGetMany's) as get() gives it.
  Result<Document> document_of(const Key& key, const redisReply& r) {
    auto status = status_of(r);
    if (!status) return bad_reply("get", key, r);
    switch (*status) {
      case 0:
        return fail(Errc::not_found, what("get", key) + ": not found");
      case 1:
        if (size_of(r) == 3 && type_of(element(r, 1)) == ReplyType::string &&
            type_of(element(r, 2)) == ReplyType::string) {
          return Document{std::string(text_of(element(r, 1))), std::string(text_of(element(r, 2)))};
        }
        break;
      case 2:
        return fail(Errc::malformed, what("get", key) + ": the key holds a Redis " +
                                         printable(field_text(r, 1)) + ", not a document");
      case 3:
        return fail(Errc::malformed, what("get", key) + ": the document is " +
                                         printable(field_text(r, 1)) +
                                         " bytes, over the 1 MiB limit (left alone)");
      case 4:
        return fail(Errc::malformed, what("get", key) +
                                         ": the hash has no data or ver field (not written by "
                                         "instance-guard; left alone)");
      default:
        break;
    }
    return bad_reply("get", key, r);
  }

  Result<std::string> create(const Key& key, std::string_view data) override {
    if (auto ok = check_size("create", key, data); !ok) return std::unexpected(ok.error());
    const std::string version = fresh();
    auto sent = eval("create", key, scripts::kCreate, {doc_key(key)}, {std::string(data), version});
    if (!sent) return std::unexpected(sent.error());
    auto status = integer("create", key, *sent->reply);
    if (!status) return std::unexpected(status.error());
    if (*status == 1) return version;
    return fail(Errc::already_exists, what("create", key) + ": the key exists");
  }

  Result<std::string> replace(const Key& key, std::string_view data) override {
    if (auto ok = check_size("replace", key, data); !ok) return std::unexpected(ok.error());
    const std::string version = fresh();
    const std::string k = doc_key(key);
    auto sent = send("replace", key, {"HSET", k, "data", data, "ver", version});
    if (!sent) return std::unexpected(sent.error());
    if (auto n = integer("replace", key, *sent->reply); !n) return std::unexpected(n.error());
    return version;
  }

  Result<void> remove(const Key& key) override {
    auto sent = eval("remove", key, scripts::kRemove, {doc_key(key)}, {doc_channel(key)});
    if (!sent) return std::unexpected(sent.error());
    auto n = integer("remove", key, *sent->reply);
    if (!n) return std::unexpected(n.error());
    if (*n == 0 && !sent->maybe_applied_before) {
      return fail(Errc::not_found, what("remove", key) + ": not found");
    }
    return {};
  }

  Result<std::vector<Key>> list(const Key& prefix) override {
    const std::string pattern = scan_pattern(prefix);
    std::set<std::string> names;  // SCAN may return a key more than once
    std::string cursor = "0";
    do {
      auto sent = send("list", prefix, {"SCAN", cursor, "MATCH", pattern, "COUNT", "1000"});
      if (!sent) return std::unexpected(sent.error());
      const redisReply& r = *sent->reply;
      if (type_of(r) != ReplyType::array || size_of(r) != 2 ||
          type_of(element(r, 0)) != ReplyType::string ||
          type_of(element(r, 1)) != ReplyType::array) {
        return bad_reply("list", prefix, r);
      }
      cursor = std::string(text_of(element(r, 0)));
      const redisReply& batch = element(r, 1);
      for (std::size_t i = 0; i < size_of(batch); ++i) {
        if (type_of(element(batch, i)) != ReplyType::string) return bad_reply("list", prefix, r);
        names.emplace(text_of(element(batch, i)));
      }
    } while (cursor != "0");
    std::vector<Key> keys;
    keys.reserve(names.size());
    for (const auto& name : names) {
      auto key = listed_key("list", prefix, name);
      if (!key) return std::unexpected(key.error());
      keys.push_back(std::move(*key));
    }
    return keys;
  }

  // A Redis key that SCAN found under `prefix`, as a document key.
  Result<Key> listed_key(std::string_view op, const Key& prefix, std::string_view name) const {
    auto key = name.starts_with(doc_ns_) ? Key::from_listing(name.substr(doc_ns_.size()))
                                         : fail(Errc::malformed, "outside the prefix");
    if (!key || !key->is_under(prefix) || key->empty()) {
      return fail(Errc::malformed, what(op, prefix) + ": the server holds \"" + printable(name) +
                                       "\", which is not a document key of this store (remove "
                                       "or rename it)");
    }
    return key;
  }

  // SCAN's pattern for every document key under `prefix`.
  std::string scan_pattern(const Key& prefix) const {
    return glob_escape(doc_ns_ + prefix.str() + (prefix.empty() ? "" : "/")) + "*";
  }

  Result<std::string> replace_if(const Key& key, std::string_view data,
                                 std::string_view version) override {
    constexpr std::string_view op = "conditional replace";
    if (auto ok = check_size(op, key, data); !ok) return std::unexpected(ok.error());
    const std::string next = fresh();
    auto sent = eval(op, key, scripts::kReplaceIf, {doc_key(key)},
                     {std::string(data), std::string(version), next});
    if (!sent) return std::unexpected(sent.error());
    auto status = integer(op, key, *sent->reply);
    if (!status) return std::unexpected(status.error());
    if (*status == 1) return next;
    if (*status == 0) return fail(Errc::not_found, what(op, key) + ": not found");
    return fail(Errc::conflict, what(op, key) + ": the version changed (someone else wrote)");
  }

  Result<void> remove_if(const Key& key, std::string_view version) override {
    constexpr std::string_view op = "conditional remove";
    auto sent =
        eval(op, key, scripts::kRemoveIf, {doc_key(key)}, {std::string(version), doc_channel(key)});
    if (!sent) return std::unexpected(sent.error());
    auto status = integer(op, key, *sent->reply);
    if (!status) return std::unexpected(status.error());
    if (*status == 1 || (*status == 0 && sent->maybe_applied_before)) return {};
    if (*status == 0) return fail(Errc::not_found, what(op, key) + ": not found");
    return fail(Errc::conflict, what(op, key) + ": the version changed (someone else wrote)");
  }

  Result<LockGrant> lock(const Key& key, Duration ttl, std::string_view) override {
    if (ttl <= Duration::zero())
      return fail(Errc::invalid, what("lock", key) + ": ttl must be positive");
    auto sent =
        eval("lock", key, scripts::kLock, {lock_key(key), epoch_key(key)}, {fresh(), ttl_ms(ttl)});
    if (!sent) return std::unexpected(sent.error());
    const redisReply& r = *sent->reply;
    if (type_of(r) == ReplyType::nil) {
      return fail(Errc::locked, what("lock", key) + ": held by another instance");
    }
    const auto epoch = type_of(r) == ReplyType::string ? parse_epoch(text_of(r)) : std::nullopt;
    if (!epoch) return bad_reply("lock", key, r);
    // The token carries the lock's epoch: the count of every lock of the key.
    return LockGrant{.token = std::string(text_of(r)), .epoch = *epoch};
  }

  Result<Duration> refresh_lock(const Key& key, std::string_view token, Duration ttl) override {
    constexpr std::string_view op = "refresh lock";
    if (ttl <= Duration::zero())
      return fail(Errc::invalid, what(op, key) + ": ttl must be positive");
    auto sent =
        eval(op, key, scripts::kRefresh, {lock_key(key)}, {std::string(token), ttl_ms(ttl)});
    if (!sent) return std::unexpected(sent.error());
    auto status = integer(op, key, *sent->reply);
    if (!status) return std::unexpected(status.error());
    if (*status == 1) return Duration::zero();  // as asked
    if (*status == 0) {
      return fail(Errc::not_found, what(op, key) +
                                       ": the lock is gone (it expired on the "
                                       "server, or the server lost it in a restart)");
    }
    return fail(Errc::locked, what(op, key) + ": another instance holds the lock now");
  }

  Result<void> unlock(const Key& key, std::string_view token) override {
    auto sent = eval("unlock", key, scripts::kUnlock, {lock_key(key)},
                     {std::string(token), lock_channel(key)});
    if (!sent) return std::unexpected(sent.error());
    auto status = integer("unlock", key, *sent->reply);
    if (!status) return std::unexpected(status.error());
    if (*status == 1) return {};
    return fail(Errc::not_found, what("unlock", key) + ": the lock was no longer ours");
  }

  // The lease operations, one script each (kClaimLease, kRenewLease,
  // kEndLease): one round trip per claim, renewal and stand-down.
  Result<LeaseClaimed> claim_lease(const LeaseClaim& c) override {
    constexpr std::string_view op = "claim lease";
    if (c.ttl <= Duration::zero()) {
      return fail(Errc::invalid, what(op, c.lock) + ": ttl must be positive");
    }
    if (auto ok = check_size(op, c.record, c.record_data); !ok) return std::unexpected(ok.error());
    const std::string pattern = scan_pattern(c.scan);
    const std::string lease_version = fresh();
    const std::string record_version = fresh();
    auto sent = eval(
        op, c.lock, scripts::kClaimLease,
        {lock_key(c.lock), epoch_key(c.lock), doc_key(c.lease), doc_key(c.record)},
        {fresh(), ttl_ms(c.ttl), c.document.head, c.document.middle, c.document.tail, c.record_data,
         lease_version, record_version, pattern, std::to_string(kMaxDocumentSize)});
    if (!sent) return std::unexpected(sent.error());
    const redisReply& r = *sent->reply;
    if (type_of(r) == ReplyType::nil) {
      return fail(Errc::locked, what(op, c.lock) + ": held by another instance");
    }
    if (type_of(r) != ReplyType::array || size_of(r) != 6 ||
        type_of(element(r, 0)) != ReplyType::string ||
        type_of(element(r, 1)) != ReplyType::integer ||
        type_of(element(r, 4)) != ReplyType::array || type_of(element(r, 5)) != ReplyType::array ||
        size_of(element(r, 4)) != size_of(element(r, 5))) {
      return bad_reply(op, c.lock, r);
    }
    const std::string token(text_of(element(r, 0)));
    const auto counted = parse_epoch(token);
    if (!counted) return bad_reply(op, c.lock, r);
    LeaseClaimed out{.grant = LockGrant{.token = token, .epoch = *counted}};
    out.previous = document_of(c.lease, element(r, 3));
    if (integer_of(element(r, 1)) != 1) return out;
    const std::string epoch = field_text(r, 2);
    const auto [end, ec] = std::from_chars(epoch.data(), epoch.data() + epoch.size(), out.epoch);
    if (ec != std::errc{} || end != epoch.data() + epoch.size() || out.epoch == 0) {
      return bad_reply(op, c.lock, r);
    }
    out.written = true;
    out.lease_version = lease_version;
    out.record_version = record_version;
    const redisReply& keys = element(r, 4);
    const redisReply& docs = element(r, 5);
    for (std::size_t i = 0; i < size_of(keys); ++i) {
      if (type_of(element(keys, i)) != ReplyType::string) return bad_reply(op, c.lock, r);
      auto key = listed_key(op, c.scan, text_of(element(keys, i)));
      if (!key) return std::unexpected(key.error());
      out.scanned.emplace_back(*key, document_of(*key, element(docs, i)));
    }
    return out;
  }
  Result<LeaseRenewed> renew_lease(const LeaseRenewal& renewal) override {
    constexpr std::string_view op = "renew lease";
    if (renewal.ttl <= Duration::zero()) {
      return fail(Errc::invalid, what(op, renewal.lock) + ": ttl must be positive");
    }
    for (const auto* doc : {&renewal.lease_data, &renewal.record_data}) {
      if (auto ok = check_size(op, renewal.lock, *doc); !ok) return std::unexpected(ok.error());
    }
    LeaseRenewed out{.lease_version = fresh(), .record_version = fresh()};
    auto sent = eval(op, renewal.lock, scripts::kRenewLease,
                     {lock_key(renewal.lock), doc_key(renewal.lease), doc_key(renewal.record)},
                     {renewal.token, ttl_ms(renewal.ttl), renewal.lease_data, out.lease_version,
                      renewal.record_data, out.record_version});
    if (!sent) return std::unexpected(sent.error());
    auto status = integer(op, renewal.lock, *sent->reply);
    if (!status) return std::unexpected(status.error());
    if (*status == 0) {
      return fail(Errc::not_found, what(op, renewal.lock) +
                                       ": the lock is gone (it expired on the "
                                       "server, or the server lost it in a restart)");
    }
    if (*status < 0) {
      return fail(Errc::locked, what(op, renewal.lock) + ": another instance holds the lock now");
    }
    out.written = *status == 1;
    return out;
  }

  Result<bool> end_lease(const LeaseEnd& end) override {
    constexpr std::string_view op = "end lease";
    if (auto ok = check_size(op, end.lock, end.lease_data); !ok) return std::unexpected(ok.error());
    auto sent =
        eval(op, end.lock, scripts::kEndLease,
             {lock_key(end.lock), doc_key(end.lease), doc_key(end.record)},
             {end.token, end.lease_data, fresh(), lock_channel(end.lock), doc_channel(end.record)});
    if (!sent) return std::unexpected(sent.error());
    auto status = integer(op, end.lock, *sent->reply);
    if (!status) return std::unexpected(status.error());
    return *status == 1;
  }

  // Pub/sub: the scripts that remove a document or end a lock publish on
  // its change channels (change_ns_). A connection of its own (a subscribed
  // connection can send nothing else) subscribes to the key's channels, and
  // stays subscribed for the next wait on the same key; then one EXISTS on
  // the store's connection asks whether the lock or document is still there
  // (a change before the subscription took effect would otherwise be
  // missed), and the wait reads the subscription until a message, the
  // timeout or a stop. A lock that expires publishes nothing: the caller's
  // poll covers it. A second wait while one runs gets a connection of its
  // own for the call. A wait that ends in a change closes the connection
  // (the caller claims next); one that timed out keeps it for the next.
  Result<bool> await_change(const Key& key, Duration timeout, std::stop_token stop) override {
    constexpr std::string_view op = "wait for a change of";
    if (stop.stop_requested()) return false;
    const auto deadline =
        std::chrono::steady_clock::now() +
        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
            std::clamp(timeout, Duration::zero(), Duration(std::chrono::hours(24))));
    std::unique_lock held(sub_mu_, std::try_to_lock);
    Subscriber spare;
    Subscriber& sub = held.owns_lock() ? subscriber_ : spare;
    TransportError transport;
    auto broken = [&](const TransportError& t) -> std::unexpected<Error> {
      sub.connection.reset();
      return fail(t.timed_out ? Errc::timeout : Errc::unavailable,
                  what(op, key) + ": the subscription failed: " + scrub(t.message));
    };
    if (sub.connection && sub.key != key.str()) sub.connection.reset();
    if (!sub.connection) {
      Error fatal;
      Step step = Step::ok;
      {
        std::lock_guard lock(mu_);  // connect() may ask the Sentinels, and records the master
        step = connect(op, key, timeouts_.get().request_timeout, transport, fatal, sub.connection);
      }
      if (step == Step::fatal) return std::unexpected(std::move(fatal));
      if (step == Step::retry) return broken(transport);
      if (options_.stats) ++options_.stats->requests;
      ReplyPtr reply =
          sub.connection->command({"SUBSCRIBE", lock_channel(key), doc_channel(key)}, transport);
      while (true) {
        if (!reply) return broken(transport);
        if (type_of(*reply) == ReplyType::error) {
          auto refused = server_error(op, key, text_of(*reply));
          sub.connection.reset();
          return refused;
        }
        if (!is_push(*reply, "subscribe")) {
          sub.connection.reset();
          return bad_reply(op, key, *reply);
        }
        if (type_of(element(*reply, 2)) == ReplyType::integer &&
            integer_of(element(*reply, 2)) == 2)
          break;
        reply = sub.connection->next_reply(transport);
      }
      sub.key = key.str();
    } else {
      // What was published since the last wait: the check below stands for it.
      while (true) {
        pollfd ready{.fd = sub.connection->fd(), .events = POLLIN, .revents = 0};
        if (::poll(&ready, 1, 0) <= 0) break;
        if (!sub.connection->read_available(transport)) return broken(transport);
      }
      while (sub.connection->buffered(transport)) {
      }
      if (!transport.message.empty()) return broken(transport);
    }
    auto present = send(op, key, {"EXISTS", lock_key(key), doc_key(key)});
    if (!present) return std::unexpected(present.error());
    auto count = integer(op, key, *present->reply);
    if (!count) return std::unexpected(count.error());
    // A change (or none to wait for): the caller claims now, and holds the
    // store for long, so the connection is not kept open for nothing.
    auto changed = [&] {
      sub.connection.reset();
      return true;
    };
    if (*count == 0) return changed();  // gone already (or never there)

    const detail::StopWake wake(stop);
    while (true) {
      while (ReplyPtr reply = sub.connection->buffered(transport)) {
        if (is_push(*reply, "message")) return changed();  // one of this key's two channels
      }
      if (!transport.message.empty()) return broken(transport);
      switch (wake.wait(sub.connection->fd(), deadline)) {
        case detail::StopWake::Ready::readable:
          if (!sub.connection->read_available(transport)) return broken(transport);
          break;
        case detail::StopWake::Ready::timeout:
        case detail::StopWake::Ready::stopped:
          return false;
        case detail::StopWake::Ready::failed:
          return fail(Errc::internal,
                      what(op, key) + ": cannot wait on the socket: " + std::strerror(errno));
      }
    }
  }

 private:
  // The connection await_change subscribes with, and the key it is
  // subscribed for.
  struct Subscriber {
    std::unique_ptr<Connection> connection;
    std::string key;
  };

  // A pub/sub push: ["subscribe" | "message", channel, count | payload].
  static bool is_push(const redisReply& r, std::string_view kind) {
    return type_of(r) == ReplyType::array && size_of(r) == 3 &&
           type_of(element(r, 0)) == ReplyType::string && text_of(element(r, 0)) == kind;
  }

  struct Sent {
    ReplyPtr reply;
    bool maybe_applied_before = false;  // an earlier attempt may have reached the server
    int attempts = 0;
  };

  std::string doc_key(const Key& key) const { return doc_ns_ + key.str(); }
  std::string lock_key(const Key& key) const { return lock_ns_ + key.str(); }
  std::string epoch_key(const Key& key) const { return epoch_ns_ + key.str(); }
  std::string doc_channel(const Key& key) const { return change_ns_ + "doc:" + key.str(); }
  std::string lock_channel(const Key& key) const { return change_ns_ + "lock:" + key.str(); }

  std::string what(std::string_view op, const Key& key) const {
    return std::string(op) + " " + (key.empty() ? std::string("(the root)") : key.str()) + " on " +
           where_;
  }

  // "<epoch>:<nonce>" -> epoch.
  static std::optional<std::uint64_t> parse_epoch(std::string_view token) {
    const auto colon = token.find(':');
    if (colon == std::string_view::npos || colon == 0 || colon + 1 == token.size()) {
      return std::nullopt;
    }
    std::uint64_t epoch = 0;
    const auto [end, ec] = std::from_chars(token.data(), token.data() + colon, epoch);
    if (ec != std::errc{} || end != token.data() + colon || epoch == 0) return std::nullopt;
    return epoch;
  }

  // 128 bits from the kernel's CSPRNG, in hex: a version or a lock nonce.
  // Never from a seeded generator: two guards drawing the same nonce would
  // each take the other's lock for its own.
  static std::string fresh() { return random_hex(16); }

  Result<void> check_size(std::string_view op, const Key& key, std::string_view data) const {
    if (data.size() > kMaxDocumentSize) {
      return fail(Errc::invalid, what(op, key) + ": the document is " +
                                     std::to_string(data.size()) + " bytes, over the 1 MiB limit");
    }
    return {};
  }

  static std::optional<long long> status_of(const redisReply& r) {
    if (type_of(r) != ReplyType::array || size_of(r) == 0 ||
        type_of(element(r, 0)) != ReplyType::integer) {
      return std::nullopt;
    }
    return integer_of(element(r, 0));
  }
  static std::string field_text(const redisReply& r, std::size_t i) {
    if (size_of(r) <= i) return {};
    const redisReply& e = element(r, i);
    if (type_of(e) == ReplyType::integer) return std::to_string(integer_of(e));
    return std::string(text_of(e));
  }

  Result<long long> integer(std::string_view op, const Key& key, const redisReply& r) const {
    if (type_of(r) != ReplyType::integer) return bad_reply(op, key, r);
    return integer_of(r);
  }

  std::unexpected<Error> bad_reply(std::string_view op, const Key& key, const redisReply& r) const {
    return fail(Errc::malformed, what(op, key) + ": unexpected reply from the server (type " +
                                     std::to_string(static_cast<int>(type_of(r))) + ")");
  }

  // A server reply, without our password in it (Redis does not echo it, but
  // a proxy or module might).
  std::string scrub(std::string_view text) const {
    std::string out = printable(text);
    if (!options_.password.empty()) {
      for (const std::string& secret : {options_.password, printable(options_.password)}) {
        for (auto at = out.find(secret); at != std::string::npos; at = out.find(secret, at)) {
          out.replace(at, secret.size(), "REDACTED");
        }
      }
    }
    return out;
  }

  std::unexpected<Error> server_error(std::string_view op, const Key& key,
                                      std::string_view text) const {
    const std::string said = "the server said: " + scrub(text);
    auto starts = [&](std::string_view word) { return text.starts_with(word); };
    if (starts("NOAUTH")) {
      return fail(Errc::permission, what(op, key) + ": " + said +
                                        " (give the password with --password-file or "
                                        "INSTANCE_GUARD_PASSWORD)");
    }
    if (starts("WRONGPASS") || starts("NOPERM") || starts("ERR AUTH") ||
        starts("ERR invalid password") || starts("ERR Client sent AUTH")) {
      return fail(Errc::permission, what(op, key) + ": " + said +
                                        " (check the user and the password file or "
                                        "INSTANCE_GUARD_PASSWORD; the user needs +@all or the "
                                        "commands EVAL, HSET, DEL, EXISTS, SCAN, TIME, INFO on the "
                                        "prefix's keys, and PUBLISH and SUBSCRIBE on its "
                                        "channels)");
    }
    if (starts("WRONGTYPE")) {
      return fail(Errc::malformed,
                  what(op, key) + ": the key holds another Redis type (" + said + ")");
    }
    if (starts("OOM")) return fail(Errc::no_space, what(op, key) + ": " + said);
    if (starts("ERR unknown command")) {
      return fail(Errc::unsupported,
                  what(op, key) + ": " + said + " (the store needs Lua scripting: EVAL)");
    }
    if (starts("READONLY")) {
      return fail(Errc::unavailable, what(op, key) + ": " + said +
                                         " (this is a read-only replica: point the URL at the "
                                         "primary)");
    }
    if (starts("ERR DB index")) {
      return fail(Errc::invalid, what(op, key) + ": " + said + " (check the database number)");
    }
    return fail(Errc::unavailable, what(op, key) + ": " + said);
  }

  Result<Sent> eval(std::string_view op, const Key& key, std::string_view script,
                    const std::vector<std::string>& keys, const std::vector<std::string>& args) {
    const std::string count = std::to_string(keys.size());
    std::vector<std::string_view> argv{"EVAL", script, count};
    for (const auto& k : keys) argv.emplace_back(k);
    for (const auto& a : args) argv.emplace_back(a);
    return send(op, key, argv);
  }

  // Opens and authenticates a connection (mu_ held). A transport failure or
  // a "not now" reply sets `transport` and answers Step::retry; a refusal
  // (credentials, database number) sets `fatal` and answers Step::fatal.
  enum class Step { ok, retry, fatal };

  bool sentinel() const { return !options_.sentinels.empty(); }

  // The guarantee line's words: what a failover can lose.
  std::string agreement() const {
    if (!sentinel()) return std::string();
    return "Redis Sentinel (master " + options_.master_name +
           "): replication is asynchronous, so a failover may lose the latest lock write; "
           "another guard may then be granted the lock, with an epoch that may repeat, while "
           "this holder runs until its next renewal fails";
  }

  // Asks the Sentinels, one after another, for the master's address (mu_
  // held). Step::fatal when Sentinels answered but none knows the name.
  Step discover(std::string_view op, const Key& key, std::chrono::milliseconds timeout,
                TransportError& transport, Error& fatal) {
    const auto each =
        std::min({options_.connect_timeout, timeout, std::chrono::milliseconds(1000)});
    std::string errors;
    bool unknown = false;
    for (const auto& [host, port] : options_.sentinels) {
      const std::string at = redis_address(host, port);
      TransportError failed;
      auto s = Connection::open(host, port, each, each, failed);
      ReplyPtr reply;
      if (s) {
        if (options_.stats) ++options_.stats->requests;
        reply = s->command({"SENTINEL", "get-master-addr-by-name", options_.master_name}, failed);
      }
      if (!reply) {
        errors += (errors.empty() ? "" : "; ") + at + ": " + failed.message;
        continue;
      }
      const redisReply& r = *reply;
      if (type_of(r) == ReplyType::nil) {
        unknown = true;
        errors += (errors.empty() ? "" : "; ") + at + ": no master named " + options_.master_name;
        continue;
      }
      int master_port = 0;
      if (type_of(r) == ReplyType::array && size_of(r) == 2 &&
          type_of(element(r, 0)) == ReplyType::string &&
          type_of(element(r, 1)) == ReplyType::string) {
        const auto p = text_of(element(r, 1));
        const auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), master_port);
        if (ec == std::errc{} && end == p.data() + p.size() && master_port > 0 &&
            master_port < 65536 && size_of(r) == 2) {
          master_host_ = std::string(text_of(element(r, 0)));
          master_port_ = master_port;
          return Step::ok;
        }
      }
      errors += (errors.empty() ? "" : "; ") + at + ": " +
                (type_of(r) == ReplyType::error ? "said " + scrub(text_of(r))
                                                : std::string("an answer that is not an address"));
    }
    const std::string message =
        "no Sentinel named the master " + options_.master_name + " (" + errors + ")";
    if (unknown) {
      fatal = Error{Errc::invalid, what(op, key) + ": " + message +
                                       "; check the master name in the store URL (the name of "
                                       "the Sentinels' monitor line)"};
      return Step::fatal;
    }
    transport = {message, false, false};
    return Step::retry;
  }

  Step connect(std::string_view op, const Key& key, std::chrono::milliseconds timeout,
               TransportError& transport, Error& fatal) {
    return connect(op, key, timeout, transport, fatal, connection_);
  }

  // Opens, authenticates and selects a connection into `out` (mu_ held).
  Step connect(std::string_view op, const Key& key, std::chrono::milliseconds timeout,
               TransportError& transport, Error& fatal, std::unique_ptr<Connection>& out) {
    if (sentinel()) {
      if (auto step = discover(op, key, timeout, transport, fatal); step != Step::ok) return step;
    }
    const std::string& host = sentinel() ? master_host_ : options_.host;
    const int port = sentinel() ? master_port_ : options_.port;
    auto connection = Connection::open(host, port, std::min(options_.connect_timeout, timeout),
                                       timeout, transport);
    if (!connection) {
      if (sentinel())
        transport.message = "master " + redis_address(host, port) + ": " + transport.message;
      return Step::retry;
    }
    if (options_.stats) ++options_.stats->connections;
    auto handshake = [&](const std::vector<std::string_view>& argv) -> Step {
      if (options_.stats) ++options_.stats->requests;
      auto reply = connection->command(argv, transport);
      if (!reply) return Step::retry;
      if (type_of(*reply) == ReplyType::error) {
        if (transient(text_of(*reply))) {
          transport = {scrub(text_of(*reply)), false, false};
          return Step::retry;
        }
        fatal = server_error(op, key, text_of(*reply)).error();
        if (argv.front() == "AUTH" && fatal.code != Errc::permission) fatal.code = Errc::permission;
        return Step::fatal;
      }
      return Step::ok;
    };
    if (!options_.password.empty()) {
      std::vector<std::string_view> auth{"AUTH"};
      if (!options_.user.empty()) auth.emplace_back(options_.user);
      auth.emplace_back(options_.password);
      if (auto step = handshake(auth); step != Step::ok) return step;
    }
    if (options_.db != 0) {
      const std::string db = std::to_string(options_.db);
      if (auto step = handshake({"SELECT", db}); step != Step::ok) return step;
    }
    if (sentinel()) {
      // A Sentinel's answer may be stale (a demoted master): writes go only
      // to a server that says it is the master.
      if (options_.stats) ++options_.stats->requests;
      auto role = connection->command({"ROLE"}, transport);
      if (!role) return Step::retry;
      const bool master = type_of(*role) == ReplyType::array && size_of(*role) > 0 &&
                          type_of(element(*role, 0)) == ReplyType::string &&
                          text_of(element(*role, 0)) == "master";
      if (!master) {
        transport = {"the Sentinels named " + redis_address(host, port) + " as master " +
                         options_.master_name + ", but it is not (yet) the master",
                     false, false};
        return Step::retry;
      }
    }
    out = std::move(connection);
    return Step::ok;
  }

  // Sends one command, reconnecting and retrying transport failures and
  // "not now" replies (instance/sdk/attempts.hpp): pauses and the deadline (the tuned
  // retry_deadline, or the start-up budget's time left when less) on the
  // store's clock, each attempt's socket timeout at most the time left (one
  // attempt when !retry). An error reply becomes an Error; any other reply
  // is returned.
  Result<Sent> send(std::string_view op, const Key& key, const std::vector<std::string_view>& argv,
                    bool retry = true) {
    std::lock_guard lock(mu_);
    const StoreTimeouts timeouts = timeouts_.get();
    Clock& clock = *options_.clock;
    const MonoTime start = clock.monotonic();
    const net::Attempts how{.retry = {.initial_backoff = options_.initial_backoff,
                                      .max_backoff = options_.max_backoff,
                                      .deadline = timeouts.retry_deadline},
                            .request_timeout = timeouts.request_timeout,
                            .once = !retry};
    // A failure no reply explains: a retry may cure it.
    auto no_reply = [&](const TransportError& t) {
      return net::attempt_error(t.timed_out ? Errc::timeout : Errc::unavailable,
                                what(op, key) + ": " + t.message, true, t.maybe_sent);
    };
    auto attempt = [&](const net::AttemptInfo& info) -> net::Attempt<ReplyPtr> {
      if (info.number > 1 && options_.stats) ++options_.stats->retries;
      TransportError transport;
      if (!connection_) {
        Error fatal;
        const Step step = connect(op, key, info.timeout, transport, fatal);
        if (step == Step::fatal) return std::unexpected(net::AttemptError{std::move(fatal)});
        if (step == Step::retry) return no_reply(transport);
      } else if (!connection_->set_timeout(info.timeout, transport)) {
        connection_.reset();
        return no_reply(transport);
      }
      if (options_.stats) ++options_.stats->requests;
      ReplyPtr reply = connection_->command(argv, transport);
      if (!reply) {
        connection_.reset();
        return no_reply(transport);
      }
      if (type_of(*reply) == ReplyType::error) {
        const std::string_view text = text_of(*reply);
        // Behind Sentinel a READONLY reply means a failover demoted our
        // server: ask the Sentinels again.
        const bool demoted = sentinel() && text.starts_with("READONLY");
        if (!transient(text) && !demoted) {
          return std::unexpected(net::AttemptError{server_error(op, key, text).error()});
        }
        if (sentinel()) connection_.reset();
        return no_reply({scrub(text), false, false});
      }
      return reply;
    };
    auto done = net::run_until_done(how, clock, attempt);
    if (done.result) {
      return Sent{.reply = std::move(*done.result),
                  .maybe_applied_before = done.may_have_applied_before,
                  .attempts = done.attempts};
    }
    Error& last = done.result.error().error;
    if (!done.gave_up) return std::unexpected(std::move(last));
    const auto spent =
        std::chrono::duration_cast<std::chrono::milliseconds>(clock.monotonic() - start);
    std::string message = std::move(last.message);
    if (done.attempts > 1) {
      message += " (after " + std::to_string(done.attempts) + " attempts in " +
                 std::to_string(spent.count()) + " ms)";
    }
    const std::string at = sentinel()
                               ? "the master " + options_.master_name + " (named by the Sentinels)"
                               : options_.host + ":" + std::to_string(options_.port);
    if (sentinel() && last.code != Errc::timeout) {
      return fail(last.code, std::move(message) +
                                 "; check that the Sentinels in the store URL run and that a "
                                 "master " +
                                 options_.master_name + " is up");
    }
    message += last.code == Errc::timeout
                   ? "; the server at " + at +
                         " did not answer in time (busy, overloaded or paused, or the network "
                         "loses packets)"
                   : "; check that redis-server runs and accepts connections at " + at;
    return fail(last.code, std::move(message));
  }

  // Diagnostics once per store: clock skew (TIME) and persistence (INFO).
  // False when the server could not be reached (probe again next time).
  bool probe() {
    const Key root;
    const WallTime before = options_.clock->wall();
    auto time = send("probe", root, {"TIME"}, false);
    if (!time) {
      log_->debug("redis probe: server not reached",
                  {{"store", where_}, {"error", time.error().message}});
      return time.error().code == Errc::permission || time.error().code == Errc::invalid;
    }
    const WallTime after = options_.clock->wall();
    const redisReply& t = *time->reply;
    if (type_of(t) == ReplyType::array && size_of(t) == 2) {
      long long secs = 0;
      long long micros = 0;
      const auto s = text_of(element(t, 0));
      const auto u = text_of(element(t, 1));
      if (std::from_chars(s.data(), s.data() + s.size(), secs).ec == std::errc{} &&
          std::from_chars(u.data(), u.data() + u.size(), micros).ec == std::errc{}) {
        const WallTime server{std::chrono::duration_cast<WallTime::duration>(
            std::chrono::seconds(secs) + std::chrono::microseconds(micros))};
        const WallTime ours = before + (after - before) / 2;
        const auto skew = server > ours ? server - ours : ours - server;
        if (skew > timeouts_.get().max_clock_skew.value_or(Duration::max())) {
          log_->warn(
              "the Redis server's clock differs from ours; leases are judged on the "
              "server's clock, records on each guard's",
              {{"store", where_},
               {"skew", format_duration(std::chrono::duration_cast<Duration>(skew))}});
        }
      }
    }
    auto info = send("probe", root, {"INFO", "persistence"}, false);
    if (!info || type_of(*info->reply) != ReplyType::string) {
      log_->debug("redis probe: INFO persistence unavailable", {{"store", where_}});
      return true;
    }
    if (text_of(*info->reply).find("aof_enabled:1") == std::string_view::npos) {
      log_->warn(
          "the Redis server runs without append-only persistence: a restart ends every "
          "lease (holders stop their command) and restarts the fencing epoch; set "
          "appendonly yes (appendfsync always) to keep them",
          {{"store", where_}});
    }
    return true;
  }

  RedisStoreOptions options_;
  const std::string where_;
  std::shared_ptr<Logger> log_;
  const std::string doc_ns_;
  const std::string lock_ns_;
  const std::string epoch_ns_;
  const std::string change_ns_;  // the channels a change of a document or lock is published on
  TunedTimeouts timeouts_;       // retry_deadline, command_timeout, max_clock_skew (tune())

  std::mutex mu_;  // guards connection_; held for a whole operation with its retries
  std::unique_ptr<Connection> connection_;
  std::string master_host_;  // mu_: the master the Sentinels named last
  int master_port_ = 0;
  std::mutex probe_mu_;
  std::atomic<bool> probed_{false};
  std::optional<MonoTime> last_probe_;  // probe_mu_, on options_.clock
  std::mutex sub_mu_;                   // guards subscriber_, held for a whole wait
  Subscriber subscriber_;
};

}  // namespace
}  // namespace redis

Result<std::shared_ptr<Store>> make_redis_store(RedisStoreOptions options) {
  if (options.host.empty()) return fail(Errc::invalid, "redis store: no host");
  for (unsigned char c : options.host) {
    if (!(std::isalnum(c) || c == '.' || c == '-' || c == '_' || c == ':')) {
      return fail(Errc::invalid, "redis store: the host holds a character a host name cannot");
    }
  }
  if (options.port < 1 || options.port > 65535) {
    return fail(Errc::invalid, "redis store: the port must be from 1 to 65535");
  }
  if (options.db < 0) return fail(Errc::invalid, "redis store: the database number is negative");
  if (!options.sentinels.empty() && options.master_name.empty()) {
    return fail(Errc::invalid, "redis store: Sentinels but no master name");
  }
  if (!options.user.empty() && options.password.empty()) {
    return fail(Errc::invalid, "redis store: a user was given but no password");
  }
  return std::make_shared<redis::RedisStore>(std::move(options));
}

}  // namespace instance
