// The PostgreSQL store: statements, retries, the table and the clock check.
// The contract is in instance/stores/postgres.hpp.
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <map>
#include <mutex>

#include "../stop_wake.hpp"
#include "connection.hpp"
#include "instance/sdk/attempts.hpp"
#include "instance/sdk/credentials.hpp"  // printable
#include "instance/sdk/random.hpp"
#include "instance/sdk/timeouts.hpp"
#include "instance/stores/postgres.hpp"
#include "sql.hpp"

namespace instance {
namespace {

using postgres::Outcome;
using postgres::Param;
using postgres::Row;

// 64 bits from the operating system, as the 16 hex digits a token carries.
std::string random_nonce() { return random_hex(8); }

std::optional<std::uint64_t> parse_number(std::string_view text) {
  std::uint64_t value = 0;
  if (text.empty() || text.size() > 19) return std::nullopt;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// A lock token is "<epoch>.<nonce>"; the row keeps the nonce.
struct Token {
  std::uint64_t epoch = 0;
  std::string_view nonce;
};
std::optional<Token> parse_token(std::string_view token) {
  const auto dot = token.find('.');
  if (dot == std::string_view::npos) return std::nullopt;
  auto epoch = parse_number(token.substr(0, dot));
  const auto nonce = token.substr(dot + 1);
  if (!epoch || nonce.size() != 16) return std::nullopt;
  return Token{*epoch, nonce};
}

// Milliseconds for a lease, at least 1 (rounded up).
std::string ttl_ms(Duration ttl) {
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(ttl).count();
  return std::to_string(std::max<std::int64_t>(ms, 1));
}

class PostgresStore final : public Store {
 public:
  explicit PostgresStore(PostgresStoreOptions options)
      : options_(std::move(options)),
        sql_(options_.table),
        timeouts_({.retry_deadline = options_.retry_deadline,
                   .request_timeout = options_.request_timeout,
                   .max_clock_skew = options_.max_clock_skew}),
        conn_(options_.params, options_.password),
        clock_(options_.clock ? options_.clock : system_clock()) {}

  std::string describe() const override { return options_.endpoint; }

  void tune(const StoreTiming& timing) override {
    timeouts_.tune(timing, options_.logger ? *options_.logger : *null_logger(), options_.endpoint);
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
    const std::string& k = key.str();
    const Param params[] = {{k}};
    auto reply = exec("get", key, sql_.get.c_str(), params);
    if (!reply) return std::unexpected(reply.error());
    if (reply->rows.empty()) return fail(Errc::not_found, what("get", key) + ": not found");
    Row& row = reply->rows.front();
    if (row.size() != 2) return malformed("get", key, "a row without data");
    return document_of(key, std::move(row[0]), std::move(row[1]));
  }

  // One statement reads them all: the keys as a text[] literal, each quoted.
  Result<std::vector<Result<Document>>> get_many(std::span<const Key> keys) override {
    if (keys.empty()) return std::vector<Result<Document>>{};
    std::string array = "{";
    for (const Key& key : keys) {
      if (array.size() > 1) array += ',';
      array += '"';
      for (char c : key.str()) {
        if (c == '"' || c == '\\') array += '\\';
        array += c;
      }
      array += '"';
    }
    array += '}';
    const auto [least, greatest] = std::ranges::minmax(keys, {}, &Key::str);
    const Param params[] = {{array}, {least.str()}, {greatest.str()}};
    auto reply = exec("get", keys.front(), sql_.get_many.c_str(), params);
    if (!reply) return std::unexpected(reply.error());
    std::map<std::string, Row*, std::less<>> found;
    for (Row& row : reply->rows) {
      if (row.size() != 3 || !row[0])
        return malformed("get", keys.front(), "a row without its key");
      found.emplace(*row[0], &row);
    }
    std::vector<Result<Document>> out;
    out.reserve(keys.size());
    for (const Key& key : keys) {
      auto it = found.find(key.str());
      if (it == found.end()) {
        out.push_back(fail(Errc::not_found, what("get", key) + ": not found"));
      } else {
        Row& row = *it->second;
        out.push_back(document_of(key, row[1], row[2]));  // copies: a key may be asked twice
      }
    }
    return out;
  }

  // A row's data and version as get() gives them.
  Result<Document> document_of(const Key& key, std::optional<std::string> data,
                               std::optional<std::string> version) {
    if (!data || !version) return malformed("get", key, "a row without data");
    if (data->size() > kMaxDocumentSize) {
      return malformed(
          "get", key,
          "document of " + std::to_string(data->size()) + " bytes exceeds the 1 MiB cap");
    }
    return Document{std::move(*data), std::move(*version)};
  }

  Result<std::string> create(const Key& key, std::string_view data) override {
    if (auto ok = check_write("create", key, data); !ok) return std::unexpected(ok.error());
    const std::string& k = key.str();
    const std::string nonce = random_nonce();
    const Param params[] = {{k}, {data, postgres::kByteaOid}, {nonce}};
    auto reply = exec("create", key, sql_.create.c_str(), params);
    if (!reply) return std::unexpected(reply.error());
    if (reply->rows.empty()) {
      return fail(Errc::already_exists, what("create", key) + ": already exists");
    }
    return version_of("create", key, reply->rows.front());
  }

  Result<std::string> replace(const Key& key, std::string_view data) override {
    if (auto ok = check_write("replace", key, data); !ok) return std::unexpected(ok.error());
    const std::string& k = key.str();
    const std::string nonce = random_nonce();
    const Param params[] = {{k}, {data, postgres::kByteaOid}, {nonce}};
    auto reply = exec("replace", key, sql_.replace.c_str(), params);
    if (!reply) return std::unexpected(reply.error());
    if (reply->rows.empty()) return malformed("replace", key, "no version returned");
    return version_of("replace", key, reply->rows.front());
  }

  Result<void> remove(const Key& key) override {
    const std::string& k = key.str();
    const Param params[] = {{k}};
    auto reply = exec("remove", key, sql_.remove.c_str(), params);
    if (!reply) return std::unexpected(reply.error());
    if (reply->rows.empty() && !reply->maybe_applied_before) {
      return fail(Errc::not_found, what("remove", key) + ": not found");
    }
    return {};
  }

  Result<std::vector<Key>> list(const Key& prefix) override {
    auto reply = under(prefix, "list", sql_.list_all, sql_.list);
    if (!reply) return std::unexpected(reply.error());
    std::vector<Key> keys;
    for (const Row& row : reply->rows) {
      auto key = listed_key(prefix, "list", row);
      if (!key) return std::unexpected(key.error());
      keys.push_back(std::move(*key));
    }
    return keys;
  }

  // One query: the keys under the prefix with their documents.
  Result<std::vector<std::pair<Key, Result<Document>>>> get_all(const Key& prefix) override {
    auto reply = under(prefix, "get all", sql_.get_all, sql_.get_all_in);
    if (!reply) return std::unexpected(reply.error());
    std::vector<std::pair<Key, Result<Document>>> out;
    out.reserve(reply->rows.size());
    for (Row& row : reply->rows) {
      if (row.size() != 3) return malformed("get all", prefix, "a row without its data");
      auto key = listed_key(prefix, "get all", row);
      if (!key) return std::unexpected(key.error());
      auto doc = document_of(*key, std::move(row[1]), std::move(row[2]));
      out.emplace_back(std::move(*key), std::move(doc));
    }
    return out;
  }

  Result<std::string> replace_if(const Key& key, std::string_view data,
                                 std::string_view version) override {
    if (auto ok = check_write("conditional replace", key, data); !ok) {
      return std::unexpected(ok.error());
    }
    if (!parse_number(version)) {
      return fail(Errc::conflict, what("conditional replace", key) + ": version does not match");
    }
    const std::string& k = key.str();
    const std::string nonce = random_nonce();
    const Param params[] = {{k}, {data, postgres::kByteaOid}, {version}, {nonce}};
    auto reply = exec("conditional replace", key, sql_.replace_if.c_str(), params);
    if (!reply) return std::unexpected(reply.error());
    // One row: (new version or NULL, whether the key existed).
    if (reply->rows.size() != 1 || reply->rows.front().size() != 2) {
      return malformed("conditional replace", key, "an unexpected reply");
    }
    const Row& row = reply->rows.front();
    if (row[0]) return *row[0];
    if (row[1] && *row[1] == "true") {
      return fail(Errc::conflict, what("conditional replace", key) + ": version does not match");
    }
    return fail(Errc::not_found, what("conditional replace", key) + ": not found");
  }

  Result<void> remove_if(const Key& key, std::string_view version) override {
    if (!parse_number(version)) {
      return fail(Errc::conflict, what("conditional remove", key) + ": version does not match");
    }
    const std::string& k = key.str();
    const Param params[] = {{k}, {version}};
    auto reply = exec("conditional remove", key, sql_.remove_if.c_str(), params);
    if (!reply) return std::unexpected(reply.error());
    // One row: (rows deleted, whether the key existed).
    if (reply->rows.size() != 1 || reply->rows.front().size() != 2) {
      return malformed("conditional remove", key, "an unexpected reply");
    }
    const Row& row = reply->rows.front();
    if (row[0] && *row[0] != "0") return {};
    if (row[1] && *row[1] == "true") {
      return fail(Errc::conflict, what("conditional remove", key) + ": version does not match");
    }
    if (reply->maybe_applied_before) return {};  // our own earlier attempt removed it
    return fail(Errc::not_found, what("conditional remove", key) + ": not found");
  }

  Result<LockGrant> lock(const Key& key, Duration ttl, std::string_view owner) override {
    if (key.empty()) return fail(Errc::invalid, "lock at " + options_.endpoint + ": empty key");
    const std::string& k = key.str();
    const std::string nonce = random_nonce();
    const std::string who = printable(owner, 256);
    const std::string ms = ttl_ms(ttl);
    const Param params[] = {{k}, {nonce}, {who}, {ms}};
    auto reply = exec("lock", key, sql_.lock.c_str(), params);
    if (!reply) return std::unexpected(reply.error());
    if (reply->rows.empty()) {
      return fail(Errc::locked, what("lock", key) +
                                    ": held by another (judged on the server's "
                                    "clock)");
    }
    const Row& row = reply->rows.front();
    const auto epoch = row.empty() || !row[0] ? std::nullopt : parse_number(*row[0]);
    if (!epoch) return malformed("lock", key, "no epoch returned");
    return LockGrant{.token = *row[0] + "." + nonce, .epoch = *epoch};
  }

  Result<Duration> refresh_lock(const Key& key, std::string_view token, Duration ttl) override {
    const auto parsed = parse_token(token);
    if (!parsed) return fail(Errc::not_found, what("refresh lock", key) + ": not a token of ours");
    const std::string& k = key.str();
    const std::string ms = ttl_ms(ttl);
    const Param params[] = {{k}, {parsed->nonce}, {ms}};
    auto reply = exec("refresh lock", key, sql_.refresh.c_str(), params);
    if (!reply) return std::unexpected(reply.error());
    if (reply->rows.empty()) {
      return fail(Errc::locked, what("refresh lock", key) +
                                    ": no longer ours (expired on the server's clock, or taken)");
    }
    return Duration::zero();  // as asked
  }

  Result<void> unlock(const Key& key, std::string_view token) override {
    const auto parsed = parse_token(token);
    if (!parsed) return fail(Errc::not_found, what("unlock", key) + ": not a token of ours");
    const std::string& k = key.str();
    const Param params[] = {{k}, {parsed->nonce}};
    auto reply = exec("unlock", key, sql_.unlock.c_str(), params);
    if (!reply) return std::unexpected(reply.error());
    if (reply->rows.empty() && !reply->maybe_applied_before) {
      return fail(Errc::not_found, what("unlock", key) + ": not ours (expired or taken)");
    }
    return {};
  }

  // The lease operations, one statement each (sql.hpp: claim_lease,
  // renew_lease, end_lease): one round trip per claim, renewal and
  // stand-down.
  Result<LeaseClaimed> claim_lease(const LeaseClaim& c) override {
    constexpr std::string_view op = "claim lease";
    if (c.lock.empty()) return fail(Errc::invalid, what(op, c.lock) + ": empty key");
    if (c.ttl <= Duration::zero()) {
      return fail(Errc::invalid, what(op, c.lock) + ": ttl must be positive");
    }
    if (c.lease == c.record) {
      return fail(Errc::invalid, what(op, c.lock) + ": the lease and the record share a key");
    }
    if (auto ok = check_write(op, c.record, c.record_data); !ok) {
      return std::unexpected(ok.error());
    }
    // The longest the filled document can be: 20 digits of epoch, a token
    // of 20 digits, a dot and the nonce.
    const std::string longest(
        c.document.head.size() + c.document.middle.size() + c.document.tail.size() + 20 + 21 + 16,
        ' ');
    if (auto ok = check_write(op, c.lease, longest); !ok) return std::unexpected(ok.error());
    const std::string nonce = random_nonce();
    const std::string who = printable(c.owner, 256);
    const std::string ms = ttl_ms(c.ttl);
    const std::string from = c.scan.empty() ? std::string() : c.scan.str() + "/";
    const std::string to = c.scan.empty() ? std::string() : c.scan.str() + "0";
    const Param params[] = {{c.lock.str()},
                            {nonce},
                            {who},
                            {ms},
                            {c.lease.str()},
                            {c.document.head, postgres::kByteaOid},
                            {c.document.middle, postgres::kByteaOid},
                            {c.document.tail, postgres::kByteaOid},
                            {c.record.str()},
                            {c.record_data, postgres::kByteaOid},
                            {from},
                            {to}};
    auto reply = exec(op, c.lock, sql_.claim_lease.c_str(), params);
    if (!reply) return std::unexpected(reply.error());
    if (reply->rows.empty()) {
      return fail(Errc::locked, what(op, c.lock) +
                                    ": held by another (judged on the server's "
                                    "clock)");
    }
    std::optional<LeaseClaimed> out;
    std::optional<Result<Document>> previous;
    std::optional<std::uint64_t> epoch;
    bool lease_written = false, record_written = false;
    std::string lease_version, record_version;
    std::vector<std::pair<Key, Result<Document>>> scanned;
    for (Row& row : reply->rows) {
      if (row.size() != 5 || !row[0] || row[0]->size() != 1) {
        return malformed(op, c.lock, "an unexpected reply");
      }
      switch ((*row[0])[0]) {
        case 'g': {
          const auto counted = row[3] ? parse_number(*row[3]) : std::nullopt;
          if (!counted || *counted == 0 || out) return malformed(op, c.lock, "no epoch returned");
          out.emplace(
              LeaseClaimed{.grant = LockGrant{.token = *row[3] + "." + nonce, .epoch = *counted}});
          break;
        }
        case 'p':
          if (previous) return malformed(op, c.lock, "two lease documents returned");
          previous = document_of(c.lease, std::move(row[2]), std::move(row[3]));
          break;
        case 'w': {
          const auto filled = row[4] ? parse_number(*row[4]) : std::nullopt;
          if (!row[1] || !row[3] || !filled || *filled == 0 || (epoch && *epoch != *filled)) {
            return malformed(op, c.lock, "a written document without its version or epoch");
          }
          epoch = filled;
          if (*row[1] == c.lease.str()) {
            lease_written = true;
            lease_version = std::move(*row[3]);
          } else if (*row[1] == c.record.str()) {
            record_written = true;
            record_version = std::move(*row[3]);
          } else {
            return malformed(op, c.lock, "wrote a document it was not asked to");
          }
          break;
        }
        case 's': {
          if (!row[1]) return malformed(op, c.lock, "a scanned row without its key");
          auto key = Key::from_listing(*row[1]);
          if (!key || key->str() != *row[1] || !key->is_under(c.scan) || *key == c.record) {
            return malformed(op, c.scan,
                             "the table holds a key with an empty or dot segment or a NUL "
                             "byte, or answered one outside the scan: " +
                                 printable(*row[1]));
          }
          auto doc = document_of(*key, std::move(row[2]), std::move(row[3]));
          scanned.emplace_back(std::move(*key), std::move(doc));
          break;
        }
        default:
          return malformed(op, c.lock, "an unexpected reply");
      }
    }
    if (!out) return malformed(op, c.lock, "no epoch returned");
    if (previous) out->previous = std::move(*previous);
    if (lease_written != record_written) {
      return malformed(op, c.lock, "wrote the lease document or the record, not both");
    }
    if (!lease_written) {
      if (!scanned.empty()) return malformed(op, c.lock, "scanned without writing");
      return std::move(*out);
    }
    out->written = true;
    out->epoch = *epoch;
    out->lease_version = std::move(lease_version);
    out->record_version = std::move(record_version);
    out->scanned = std::move(scanned);
    return std::move(*out);
  }

  Result<LeaseRenewed> renew_lease(const LeaseRenewal& r) override {
    constexpr std::string_view op = "renew lease";
    if (r.ttl <= Duration::zero()) {
      return fail(Errc::invalid, what(op, r.lock) + ": ttl must be positive");
    }
    if (r.lease == r.record) {
      return fail(Errc::invalid, what(op, r.lock) + ": the lease and the record share a key");
    }
    if (auto ok = check_write(op, r.lease, r.lease_data); !ok) return std::unexpected(ok.error());
    if (auto ok = check_write(op, r.record, r.record_data); !ok) {
      return std::unexpected(ok.error());
    }
    const auto parsed = parse_token(r.token);
    if (!parsed) return fail(Errc::not_found, what(op, r.lock) + ": not a token of ours");
    const std::string ms = ttl_ms(r.ttl);
    const Param params[] = {{r.lock.str()},
                            {parsed->nonce},
                            {ms},
                            {r.lease.str()},
                            {r.lease_data, postgres::kByteaOid},
                            {r.record.str()},
                            {r.record_data, postgres::kByteaOid}};
    auto reply = exec(op, r.lock, sql_.renew_lease.c_str(), params);
    if (!reply) return std::unexpected(reply.error());
    if (reply->rows.size() != 1 || reply->rows.front().size() != 5 || !reply->rows.front()[0]) {
      return malformed(op, r.lock, "an unexpected reply");
    }
    Row& row = reply->rows.front();
    if (*row[0] == "0") {
      // Someone else's nonce in the row: taken; none, or ours expired: gone.
      if (row[1] && *row[1] != parsed->nonce) {
        return fail(Errc::locked,
                    what(op, r.lock) + ": no longer ours (taken by another instance)");
      }
      return fail(Errc::not_found,
                  what(op, r.lock) + ": no longer ours (expired on the server's clock)");
    }
    if (*row[0] != "1" || !row[3] || !row[4]) {
      return malformed(op, r.lock, "refreshed without writing the lease document and record");
    }
    return LeaseRenewed{.granted = Duration::zero(),
                        .written = true,
                        .lease_version = std::move(*row[3]),
                        .record_version = std::move(*row[4])};
  }

  Result<bool> end_lease(const LeaseEnd& e) override {
    constexpr std::string_view op = "end lease";
    if (auto ok = check_write(op, e.lease, e.lease_data); !ok) return std::unexpected(ok.error());
    if (e.lease == e.record) {
      return fail(Errc::invalid, what(op, e.lock) + ": the lease and the record share a key");
    }
    const auto parsed = parse_token(e.token);
    // Not a token of ours: no lock of ours to end; the caller goes step by
    // step (and its unlock says why).
    if (!parsed) return false;
    const Param params[] = {{e.lock.str()},
                            {parsed->nonce},
                            {e.lease.str()},
                            {e.lease_data, postgres::kByteaOid},
                            {e.record.str()}};
    auto reply = exec(op, e.lock, sql_.end_lease.c_str(), params);
    if (!reply) return std::unexpected(reply.error());
    if (reply->rows.size() != 1 || reply->rows.front().size() != 3 ||
        !std::ranges::all_of(reply->rows.front(),
                             [](const auto& col) { return col.has_value(); })) {
      return malformed(op, e.lock, "an unexpected reply");
    }
    return true;
  }

  // LISTEN/NOTIFY: the statements that remove a document or end a lock
  // notify the table's channel with the key, in the same statement (so at
  // its commit). A connection of its own LISTENs (and stays listening for
  // the next wait), then asks once whether a document or a live lock has
  // the key (a change before the LISTEN took effect would otherwise be
  // missed), and the wait reads notifications until one names the key, the
  // timeout or a stop. A lock that expires notifies nobody: the caller's
  // poll covers it. A second wait while one runs gets a connection of its
  // own for the call. A wait that ends in a change closes the connection
  // (the caller claims next); one that timed out keeps it for the next.
  Result<bool> await_change(const Key& key, Duration timeout, std::stop_token stop) override {
    constexpr std::string_view op = "wait for a change of";
    if (stop.stop_requested()) return false;
    const auto now = std::chrono::steady_clock::now();
    const auto deadline =
        now + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                  std::clamp(timeout, Duration::zero(), Duration(std::chrono::hours(24))));
    std::unique_lock held(listen_mu_, std::try_to_lock);
    std::optional<Listener> spare;
    if (!held.owns_lock()) spare.emplace(options_.params, options_.password);
    Listener& l = held.owns_lock() ? listener_ : *spare;
    const auto budget = timeouts_.get().request_timeout;
    auto failed = [&](const Outcome& out) -> std::unexpected<Error> {
      l.conn.drop();
      l.listening = false;
      return std::unexpected(error_for(op, key, out, 1));
    };
    std::string why;
    if (!l.conn.connected()) l.listening = false;
    if (!l.listening) {
      Outcome out = l.conn.connect(now + std::min(options_.connect_timeout, budget));
      if (out.kind != Outcome::ok) return failed(out);
      out = l.conn.run_simple(sql_.listen.c_str(), std::chrono::steady_clock::now() + budget);
      if (out.kind != Outcome::ok) return failed(out);
      l.listening = true;
    } else {
      // What was notified since the last wait: the check below stands for it.
      if (!l.conn.consume_input(why)) return failed({.kind = Outcome::transport, .message = why});
      while (l.conn.next_notification()) {
      }
    }
    const std::string& k = key.str();
    const Param params[] = {{k}};
    Outcome out =
        l.conn.run(sql_.present.c_str(), params, std::chrono::steady_clock::now() + budget);
    // A change (or none to wait for): the caller claims now, and holds the
    // store for long, so the connection is not kept open for nothing.
    auto changed = [&] {
      l.conn.drop();
      l.listening = false;
      return true;
    };
    if (out.kind == Outcome::sql_error && out.sqlstate == "42P01") return changed();  // no table
    if (out.kind != Outcome::ok) return failed(out);
    if (out.rows.empty()) return changed();  // gone already (or never there)

    const detail::StopWake wake(stop);
    while (true) {
      while (auto payload = l.conn.next_notification()) {
        if (payload->empty() || *payload == k) return changed();
      }
      switch (wake.wait(l.conn.socket(), deadline)) {
        case detail::StopWake::Ready::readable:
          if (!l.conn.consume_input(why)) {
            return failed({.kind = Outcome::transport, .message = why});
          }
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
  // The connection await_change listens on.
  struct Listener {
    Listener(std::vector<std::pair<std::string, std::string>> params, std::string password)
        : conn(std::move(params), std::move(password)) {}
    postgres::Connection conn;
    bool listening = false;  // LISTEN ran on this connection
  };

  struct Reply {
    std::vector<Row> rows;
    bool maybe_applied_before = false;  // an earlier attempt may have run the statement
  };

  // Runs `all` (the root) or `in` ($1 from, $2 to) over the keys under
  // `prefix`.
  Result<Reply> under(const Key& prefix, std::string_view op, const std::string& all,
                      const std::string& in) {
    if (prefix.empty()) return exec(op, prefix, all.c_str(), {});
    // Every key under "p/" lies in ["p/", "p0") in byte order ('0' follows '/').
    const std::string from = prefix.str() + "/";
    const std::string to = prefix.str() + "0";
    const Param params[] = {{from}, {to}};
    return exec(op, prefix, in.c_str(), params);
  }

  // The key in a listed row's first column.
  Result<Key> listed_key(const Key& prefix, std::string_view op, const Row& row) {
    if (row.empty() || !row[0]) return malformed(op, prefix, "a row without a key");
    auto key = Key::from_listing(*row[0]);
    if (!key || key->str() != *row[0]) {
      return malformed(op, prefix,
                       "the table holds a key with an empty or dot segment or "
                       "a NUL byte: " +
                           printable(*row[0]));
    }
    return std::move(*key);
  }

  // Runs one statement, retrying what a retry may cure (instance/sdk/attempts.hpp):
  // pauses and the deadline (the tuned retry_deadline, or the start-up
  // budget's time left when less) on the store's clock, each attempt's I/O
  // bounded by the time left. A table dropped under us is made again once,
  // within the attempt.
  Result<Reply> exec(std::string_view op, const Key& key, const char* statement,
                     std::span<const Param> params) {
    std::lock_guard lock(mu_);
    const StoreTimeouts timeouts = timeouts_.get();
    const net::Attempts how{.retry = {.initial_backoff = options_.initial_backoff,
                                      .max_backoff = options_.max_backoff,
                                      .deadline = timeouts.retry_deadline},
                            .request_timeout = timeouts.request_timeout};
    bool schema_retried = false;
    std::string failed;  // the last failure, scrubbed
    auto attempt = [&](const net::AttemptInfo& info) {
      Outcome out;
      while (true) {
        out = ready(info.timeout);
        if (out.kind == Outcome::ok) {
          out = conn_.run(statement, params, std::chrono::steady_clock::now() + info.timeout);
        }
        if (out.kind != Outcome::sql_error || out.sqlstate != "42P01" || schema_retried) break;
        schema_retried = true;  // the table was dropped under us: make it again
        schema_ready_ = false;
      }
      if (out.kind != Outcome::ok && out.kind != Outcome::sql_error) lost_ = true;
      if (out.kind == Outcome::sql_error && out.sqlstate == "25006") {
        conn_.drop();  // a standby now: libpq picks the writable host on the next connect
        lost_ = true;
      }
      const bool retry = out.kind != Outcome::ok && postgres::is_retryable(out);
      const bool applied = out.sent && out.kind != Outcome::sql_error;
      failed = retry ? scrub(out.message) : std::string();
      return net::Tried<Outcome>{std::move(out), retry, applied, what(op, key) + ": " + failed};
    };
    auto on_retry = [&](const net::AttemptInfo& info, std::string_view, Duration) {
      if (auto* log = options_.logger.get()) {
        log->debug("PostgreSQL statement failed; retrying",
                   {{"op", std::string(op)},
                    {"store", options_.endpoint},
                    {"error", failed},
                    {"attempt", std::to_string(info.number)}});
      }
    };
    auto done = net::run_attempts(how, *clock_, attempt, on_retry);
    if (done.outcome.kind != Outcome::ok) {
      return std::unexpected(error_for(op, key, done.outcome, done.attempts));
    }
    return Reply{.rows = std::move(done.outcome.rows),
                 .maybe_applied_before = done.may_have_applied_before};
  }

  // Connected, clock checked, table present (mu_ held); each step's I/O
  // within `timeout` (a connection within connect_timeout too).
  Outcome ready(std::chrono::milliseconds timeout) {
    if (!conn_.connected()) {
      Outcome out = conn_.connect(std::chrono::steady_clock::now() +
                                  std::min(options_.connect_timeout, timeout));
      if (out.kind != Outcome::ok) return out;
      if (lost_ && connected_once_) {
        if (auto* log = options_.logger.get()) {
          log->info("reconnected to PostgreSQL", {{"store", options_.endpoint}});
        }
      }
      lost_ = false;
      connected_once_ = true;
      check_clock(timeout);
    }
    if (!schema_ready_) {
      Outcome out = make_schema(timeout);
      if (out.kind != Outcome::ok) return out;
      schema_ready_ = true;
    }
    return {};
  }

  // Creates the table, its sequences and its function when missing (a table
  // made by an earlier version gets the function); concurrent creators are
  // serialised by an advisory lock.
  Outcome make_schema(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    const Param names[] = {{sql_.table_ident},
                           {sql_.version_seq_ident},
                           {sql_.epoch_seq_ident},
                           {sql_.lease_epoch_fn}};
    Outcome out = conn_.run(sql_.exists.c_str(), names, deadline);
    if (out.kind != Outcome::ok) return out;
    if (out.rows.size() == 1 &&
        std::ranges::all_of(out.rows.front(), [](const auto& c) { return c.has_value(); })) {
      return out;
    }
    out = conn_.run_simple(sql_.create_schema.c_str(), deadline);
    if (out.kind == Outcome::sql_error) conn_.drop();  // maybe inside a failed transaction
    if (out.kind == Outcome::ok) {
      if (auto* log = options_.logger.get()) {
        log->info("created the PostgreSQL table",
                  {{"store", options_.endpoint}, {"table", options_.table}});
      }
    }
    return out;
  }

  // Compares the server's clock with ours, once per connection; one warning.
  void check_clock(std::chrono::milliseconds timeout) {
    const WallTime before = clock_->wall();
    Outcome out =
        conn_.run(sql_.server_time.c_str(), {}, std::chrono::steady_clock::now() + timeout);
    const WallTime after = clock_->wall();
    if (out.kind != Outcome::ok || out.rows.empty() || out.rows.front().empty() ||
        !out.rows.front()[0]) {
      return;  // the statement that follows will report the trouble
    }
    std::int64_t micros = 0;
    const auto& text = *out.rows.front()[0];
    if (std::from_chars(text.data(), text.data() + text.size(), micros).ec != std::errc{}) return;
    const WallTime server{std::chrono::microseconds(micros)};
    const WallTime ours = before + (after - before) / 2;
    const auto skew = server > ours ? server - ours : ours - server;
    if (skew > timeouts_.get().max_clock_skew.value_or(Duration::max()) && !skew_warned_) {
      skew_warned_ = true;
      if (auto* log = options_.logger.get()) {
        log->warn(
            "the PostgreSQL server's clock differs from ours; leases are judged on the "
            "server's clock, but records' expiry on each guard's own",
            {{"store", options_.endpoint},
             {"skew_ms",
              std::to_string(
                  std::chrono::duration_cast<std::chrono::milliseconds>(skew).count())}});
      }
    }
  }

  // The guarantee line's words for the replication behind the primary, from
  // the server's settings as this session sees them (asked once, until it
  // answers; a question that failed is not asked again within the same
  // retry window, so a server that is down costs one round of attempts per
  // window, not one per capabilities() call). Commits wait for a standby
  // only when synchronous_standby_names names one and synchronous_commit is
  // on or remote_apply; anything less (remote_write, local, off) may confirm
  // a lease row a failover then loses.
  std::string agreement() {
    std::lock_guard lock(topology_mu_);
    if (!topology_) {
      const auto not_learnt = [this] {
        return hosts_ > 1 ? "PostgreSQL with " + std::to_string(hosts_) +
                                " hosts (its replication not learnt): a failover may lose "
                                "the latest lease rows unless replication is synchronous"
                          : std::string();
      };
      const MonoTime now = clock_->monotonic();
      if (topology_failed_at_ && now - *topology_failed_at_ < timeouts_.get().retry_deadline) {
        return not_learnt();
      }
      auto reply = exec("learn the replication", Key{}, sql_.replication.c_str(), {});
      if (!reply || reply->rows.size() != 1 || reply->rows.front().size() != 3 ||
          !std::ranges::all_of(reply->rows.front(), [](const auto& c) { return c.has_value(); })) {
        topology_failed_at_ = clock_->monotonic();
        return not_learnt();
      }
      const Row& row = reply->rows.front();
      topology_ = Topology{.standby_names = *row[0],
                           .commit = *row[1],
                           .streaming = parse_number(*row[2]).value_or(0)};
    }
    const Topology& t = *topology_;
    const bool sync = !t.standby_names.empty() && (t.commit == "on" || t.commit == "remote_apply");
    const std::string who = "PostgreSQL primary (" + std::to_string(hosts_) +
                            (hosts_ == 1 ? " host" : " hosts") + " in the store URL, " +
                            std::to_string(t.streaming) + " standby streaming)";
    if (sync) {
      return who + ", synchronous replication (synchronous_standby_names '" +
             printable(t.standby_names, 80) + "', synchronous_commit " + t.commit +
             "): a lease row is on a standby before the primary confirms it, so a promoted "
             "standby keeps the claim and its epoch";
    }
    if (t.streaming == 0 && hosts_ == 1) return std::string();
    return who + ", asynchronous replication (synchronous_commit " + t.commit +
           "): a failover can lose the latest lease rows and epochs, so a promoted standby may "
           "grant the lock, even with an epoch already given, to another guard while the old "
           "holder still thinks it holds, until its renewal fails and it fences itself (within "
           "its ttl)";
  }

  std::string what(std::string_view op, const Key& key) const {
    std::string out(op);
    if (!key.empty()) out += " " + key.str();
    return out + " at " + options_.endpoint;
  }

  // The password never appears in a message, whatever libpq or the server said.
  std::string scrub(std::string text) const {
    const std::string& secret = options_.password;
    if (secret.empty()) return text;
    for (auto at = text.find(secret); at != std::string::npos; at = text.find(secret, at)) {
      text.replace(at, secret.size(), "REDACTED");
      at += 8;
    }
    return text;
  }

  Error error_for(std::string_view op, const Key& key, const Outcome& out, int attempts) const {
    Errc code = Errc::unavailable;
    std::string why = scrub(out.message);
    if (out.kind == Outcome::timeout) {
      code = Errc::timeout;
    } else if (out.kind == Outcome::sql_error) {
      code = postgres::map_sqlstate(out.sqlstate);
      why += " (SQLSTATE " + out.sqlstate + ")";
      if (out.sqlstate == "42P01" || out.sqlstate == "42703" || out.sqlstate == "42804") {
        why += "; is " + options_.table + " an instance-guard table?";
      }
    }
    std::string message = what(op, key) + ": " + why;
    if (attempts > 1) message += " (after " + std::to_string(attempts) + " attempts)";
    return Error{code, std::move(message)};
  }

  Result<void> check_write(std::string_view op, const Key& key, std::string_view data) const {
    if (key.empty()) return fail(Errc::invalid, what(op, key) + ": empty key");
    if (data.size() > kMaxDocumentSize) {
      return fail(Errc::invalid, what(op, key) + ": document of " + std::to_string(data.size()) +
                                     " bytes exceeds the 1 MiB cap");
    }
    return {};
  }

  std::unexpected<Error> malformed(std::string_view op, const Key& key, std::string why) const {
    return fail(Errc::malformed, what(op, key) + ": " + std::move(why));
  }

  Result<std::string> version_of(std::string_view op, const Key& key, const Row& row) const {
    if (row.empty() || !row[0]) return malformed(op, key, "no version returned");
    return *row[0];
  }

  const PostgresStoreOptions options_;
  const postgres::Statements sql_;
  TunedTimeouts timeouts_;  // retry_deadline, request_timeout, max_clock_skew (tune())
  std::mutex mu_;           // guards everything below
  postgres::Connection conn_;
  std::shared_ptr<Clock> clock_;
  bool schema_ready_ = false;
  bool lost_ = false;  // a connection broke; say so when it is back
  bool connected_once_ = false;
  bool skew_warned_ = false;

  struct Topology {
    std::string standby_names;  // synchronous_standby_names
    std::string commit;         // synchronous_commit
    std::uint64_t streaming = 0;
  };
  std::mutex topology_mu_;  // guards topology_ (taken before mu_)
  std::optional<Topology> topology_;
  std::optional<MonoTime> topology_failed_at_;  // when asking for topology_ last failed
  const std::size_t hosts_ = postgres::host_count(options_.params);
  std::mutex listen_mu_;  // guards listener_, held for a whole wait
  Listener listener_{options_.params, options_.password};
};

}  // namespace

Result<std::shared_ptr<Store>> make_postgres_store(PostgresStoreOptions options) {
  if (auto ok = postgres::check_table_name(options.table); !ok) return std::unexpected(ok.error());
  for (const auto& [keyword, value] : options.params) {
    if (keyword == "password" || keyword == "sslpassword") {
      return fail(Errc::invalid,
                  "PostgreSQL store options: give the password in "
                  "PostgresStoreOptions::password, not among the parameters");
    }
  }
  if (options.endpoint.empty())
    options.endpoint = postgres::endpoint_of(options.params, options.table);
  return std::make_shared<PostgresStore>(std::move(options));
}

}  // namespace instance
