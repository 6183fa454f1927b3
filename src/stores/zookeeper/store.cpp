// The ZooKeeper store (contract in instance/stores/zookeeper.hpp): znode
// layout, sessions, the attempt loop and error mapping.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <deque>
#include <map>
#include <mutex>
#include <optional>

#include "instance/sdk/attempts.hpp"
#include "instance/sdk/text.hpp"
#include "instance/sdk/timeouts.hpp"
#include "instance/stores/zookeeper.hpp"
#include "session.hpp"

namespace instance {
namespace {

using zk::Session;
using zk::SessionState;

// A folder's znode name: the key segment and a mark no canonical segment has.
constexpr char kFolderMark = '~';
constexpr int kMaxParentRaces = 4;
// get_many() sends at most this many getData at once (one round trip): the
// guard's scans ask 64 at a time; a larger batch is read in turns, so that
// no more than this many answers (each at most one document) are in flight.
constexpr std::size_t kPipelinedReads = 64;

std::string version_text(const Stat& stat) {
  return std::to_string(stat.czxid) + "." + std::to_string(stat.version);
}

struct Version {
  std::int64_t czxid = 0;
  std::int32_t data = 0;
};

std::optional<Version> parse_version(std::string_view text) {
  const auto dot = text.find('.');
  if (dot == std::string_view::npos) return std::nullopt;
  Version v;
  const auto a = text.substr(0, dot);
  const auto b = text.substr(dot + 1);
  auto [ea, ca] = std::from_chars(a.data(), a.data() + a.size(), v.czxid);
  auto [eb, cb] = std::from_chars(b.data(), b.data() + b.size(), v.data);
  if (ca != std::errc{} || ea != a.data() + a.size() || cb != std::errc{} ||
      eb != b.data() + b.size() || v.czxid <= 0 || v.data < 0) {
    return std::nullopt;
  }
  return v;
}

// A lock token: "<session id in hex>:<czxid of the lock znode>".
struct LockToken {
  std::int64_t session = 0;
  std::int64_t czxid = 0;
};

std::string token_text(std::int64_t session, std::int64_t czxid) {
  char hex[17];
  auto [end, ec] = std::to_chars(hex, hex + sizeof hex, static_cast<std::uint64_t>(session), 16);
  (void)ec;
  return std::string(hex, end) + ":" + std::to_string(czxid);
}

std::optional<LockToken> parse_token(std::string_view text) {
  const auto colon = text.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  std::uint64_t session = 0;
  LockToken t;
  const auto a = text.substr(0, colon);
  const auto b = text.substr(colon + 1);
  auto [ea, ca] = std::from_chars(a.data(), a.data() + a.size(), session, 16);
  auto [eb, cb] = std::from_chars(b.data(), b.data() + b.size(), t.czxid);
  if (ca != std::errc{} || ea != a.data() + a.size() || cb != std::errc{} ||
      eb != b.data() + b.size()) {
    return std::nullopt;
  }
  t.session = static_cast<std::int64_t>(session);
  return t;
}

// The znode of `key` under `base`: every segment but the last is a folder.
std::string znode_of(const std::string& base, const Key& key) {
  std::string out = base;
  const auto segments = key.escaped_segments();
  for (std::size_t i = 0; i < segments.size(); ++i) {
    out += "/" + segments[i];
    if (i + 1 < segments.size()) out += kFolderMark;
  }
  return out;
}

std::string folder_of(const std::string& base, const Key& prefix) {
  std::string out = base;
  for (const auto& segment : prefix.escaped_segments()) out += "/" + segment + kFolderMark;
  return out;
}

Result<void> done_void(const Result<bool>& done) {
  if (!done) return std::unexpected(done.error());
  return {};
}

struct LockSession {
  std::shared_ptr<Session> session;
  std::string path;
  Key key;
  std::int64_t czxid = 0;
};

class ZookeeperStore final : public Store {
 public:
  explicit ZookeeperStore(ZookeeperStoreOptions options)
      : options_(std::move(options)),
        shown_("zk://" + options_.servers + options_.root),
        log_(options_.logger ? options_.logger : null_logger()),
        digest_(options_.user.empty() ? std::string() : options_.user + ":" + options_.password),
        docs_(options_.root + "/docs"),
        locks_(options_.root + "/locks"),
        timeouts_({.retry_deadline = options_.retry_deadline,
                   .request_timeout = options_.request_timeout,
                   .max_clock_skew = std::nullopt}) {
    if (!options_.clock) options_.clock = system_clock();
  }

  ~ZookeeperStore() override {
    // Closing a session deletes its lock znodes at once.
    std::map<std::string, std::shared_ptr<LockSession>> held;
    {
      std::lock_guard lock(locks_mu_);
      held.swap(held_);
    }
  }

  std::string describe() const override { return shown_; }

  void tune(const StoreTiming& timing) override { timeouts_.tune(timing, *log_, shown_); }

  Capabilities capabilities() override {
    return {.versions = true,
            .conditional_writes = true,
            .native_lease = true,
            .server_clock = true,
            .batch_reads = true};
  }

  Result<Document> get(const Key& key) override {
    const std::string what = "zookeeper get " + key.str() + " at " + shown_;
    if (key.empty()) return fail(Errc::invalid, what + ": the root is not a document");
    const std::string path = znode_of(docs_, key);
    return run<Document>(what, [&](Session& s, const net::AttemptInfo&) -> net::Attempt<Document> {
      return read(s, path, what);
    });
  }

  // The keys' getData sent at once on the documents' session and their
  // answers awaited (Session::get_all): one round trip per kPipelinedReads
  // keys. Each answer is decoded as get() decodes its own (document_of).
  Result<std::vector<Result<Document>>> get_many(std::span<const Key> keys) override {
    std::vector<Result<Document>> out;
    out.reserve(keys.size());
    for (std::size_t at = 0; at < keys.size(); at += kPipelinedReads) {
      const auto part = keys.subspan(at, std::min(kPipelinedReads, keys.size() - at));
      auto docs = read_many(part);
      if (!docs) return std::unexpected(std::move(docs.error()));
      for (auto& doc : *docs) out.push_back(std::move(doc));
    }
    return out;
  }

  Result<std::string> create(const Key& key, std::string_view data) override {
    const std::string what = "zookeeper create " + key.str() + " at " + shown_;
    if (auto bad = check_write(key, data, what); !bad) return std::unexpected(bad.error());
    const std::string path = znode_of(docs_, key);
    return run<std::string>(
        what, [&](Session& s, const net::AttemptInfo& info) -> net::Attempt<std::string> {
          Stat stat{};
          const int rc = create_node(s, path, data, ZOO_PERSISTENT, &stat);
          if (rc == ZOK) return version_text(stat);
          if (rc == ZNODEEXISTS) {
            if (info.may_have_applied_before) {  // our earlier attempt may have made it
              auto doc = read(s, path, what);
              if (doc && doc->data == data) return doc->version;
            }
            return net::attempt_error(Errc::already_exists, what + ": the key exists");
          }
          return std::unexpected(failure(rc, what));
        });
  }

  Result<std::string> replace(const Key& key, std::string_view data) override {
    const std::string what = "zookeeper put " + key.str() + " at " + shown_;
    if (auto bad = check_write(key, data, what); !bad) return std::unexpected(bad.error());
    const std::string path = znode_of(docs_, key);
    return run<std::string>(
        what, [&](Session& s, const net::AttemptInfo&) -> net::Attempt<std::string> {
          for (int race = 0; race < kMaxParentRaces; ++race) {
            Stat stat{};
            int rc = zoo_set2(s.handle(), path.c_str(), data.data(), static_cast<int>(data.size()),
                              -1, &stat);
            if (rc == ZNONODE) rc = create_node(s, path, data, ZOO_PERSISTENT, &stat);
            if (rc == ZOK) return version_text(stat);
            if (rc != ZNODEEXISTS) return std::unexpected(failure(rc, what));
          }
          return net::attempt_error(Errc::conflict, what + ": created and removed meanwhile", true);
        });
  }

  Result<void> remove(const Key& key) override {
    const std::string what = "zookeeper delete " + key.str() + " at " + shown_;
    if (key.empty()) return fail(Errc::invalid, what + ": the root is not a document");
    const std::string path = znode_of(docs_, key);
    return done_void(
        run<bool>(what, [&](Session& s, const net::AttemptInfo& info) -> net::Attempt<bool> {
          const int rc = zoo_delete(s.handle(), path.c_str(), -1);
          if (rc == ZOK || (rc == ZNONODE && info.may_have_applied_before)) return true;
          if (rc == ZNONODE) return net::attempt_error(Errc::not_found, what + ": not found");
          return std::unexpected(failure(rc, what));
        }));
  }

  Result<std::vector<Key>> list(const Key& prefix) override {
    const std::string what =
        "zookeeper list " + (prefix.empty() ? std::string("/") : prefix.str()) + " at " + shown_;
    return run<std::vector<Key>>(
        what, [&](Session& s, const net::AttemptInfo&) -> net::Attempt<std::vector<Key>> {
          std::vector<Key> keys;
          // Folders to read: their znode and their key (escaped) with '/' after it.
          std::deque<std::pair<std::string, std::string>> folders;
          folders.emplace_back(prefix.empty() ? docs_ : folder_of(docs_, prefix),
                               prefix.empty() ? std::string() : prefix.str() + "/");
          while (!folders.empty()) {
            auto [path, under] = std::move(folders.front());
            folders.pop_front();
            String_vector children{};
            const int rc = zoo_get_children(s.handle(), path.c_str(), 0, &children);
            if (rc == ZNONODE) continue;  // absent, or an empty folder the server removed
            if (rc != ZOK) return std::unexpected(failure(rc, what));
            std::optional<std::string> bad;
            for (std::int32_t i = 0; i < children.count; ++i) {
              std::string name(children.data[i]);
              if (name.size() > 1 && name.back() == kFolderMark) {
                folders.emplace_back(path + "/" + name,
                                     under + name.substr(0, name.size() - 1) + "/");
                continue;
              }
              auto key = Key::from_listing(under + name);
              if (!key || key->empty()) {
                bad = name;
                break;
              }
              keys.push_back(std::move(*key));
            }
            deallocate_String_vector(&children);
            if (bad) {
              return net::attempt_error(Errc::malformed,
                                        what + ": the znode \"" + printable(path + "/" + *bad) +
                                            "\" cannot be a key (remove or rename it)");
            }
          }
          return keys;
        });
  }

  Result<std::string> replace_if(const Key& key, std::string_view data,
                                 std::string_view version) override {
    const std::string what = "zookeeper conditional put " + key.str() + " at " + shown_;
    if (auto bad = check_write(key, data, what); !bad) return std::unexpected(bad.error());
    const auto v = parse_version(version);
    if (!v) return not_a_version(what, version);
    const std::string path = znode_of(docs_, key);
    return run<std::string>(
        what, [&](Session& s, const net::AttemptInfo& info) -> net::Attempt<std::string> {
          if (auto same = same_incarnation(s, path, *v, what); !same) {
            if (info.may_have_applied_before) {
              if (auto mine = ours(s, path, data, *v, what)) return *mine;
            }
            return std::unexpected(std::move(same.error()));
          }
          Stat stat{};
          const int rc = zoo_set2(s.handle(), path.c_str(), data.data(),
                                  static_cast<int>(data.size()), v->data, &stat);
          if (rc == ZOK) return version_text(stat);
          if (rc == ZBADVERSION) {
            if (info.may_have_applied_before) {
              if (auto mine = ours(s, path, data, *v, what)) return *mine;
            }
            return net::attempt_error(Errc::conflict, what + ": the version changed");
          }
          if (rc == ZNONODE) return net::attempt_error(Errc::not_found, what + ": not found");
          return std::unexpected(failure(rc, what));
        });
  }

  Result<void> remove_if(const Key& key, std::string_view version) override {
    const std::string what = "zookeeper conditional delete " + key.str() + " at " + shown_;
    if (key.empty()) return fail(Errc::invalid, what + ": the root is not a document");
    const auto v = parse_version(version);
    if (!v) return not_a_version(what, version);
    const std::string path = znode_of(docs_, key);
    return done_void(
        run<bool>(what, [&](Session& s, const net::AttemptInfo& info) -> net::Attempt<bool> {
          auto same = same_incarnation(s, path, *v, what);
          if (!same) {
            if (info.may_have_applied_before && same.error().error.code == Errc::not_found)
              return true;  // our earlier attempt deleted it
            return std::unexpected(std::move(same.error()));
          }
          const int rc = zoo_delete(s.handle(), path.c_str(), v->data);
          if (rc == ZOK) return true;
          if (rc == ZBADVERSION)
            return net::attempt_error(Errc::conflict, what + ": the version changed");
          if (rc == ZNONODE) return net::attempt_error(Errc::not_found, what + ": not found");
          return std::unexpected(failure(rc, what));
        }));
  }

  Result<LockGrant> lock(const Key& key, Duration ttl, std::string_view owner) override {
    const std::string what = "zookeeper lock " + key.str() + " at " + shown_;
    if (key.empty()) return fail(Errc::invalid, what + ": the root cannot be locked");
    if (owner.size() > 64 * 1024) return fail(Errc::invalid, what + ": the owner text is too long");
    // The lock's own session, asking the ttl as its timeout.
    const auto asked = std::max<std::chrono::milliseconds>(
        std::chrono::milliseconds(1), std::chrono::ceil<std::chrono::milliseconds>(ttl));
    std::string why;
    std::shared_ptr<Session> session = Session::open(options_.servers, asked, digest_, why);
    if (!session) return fail(Errc::invalid, what + ": " + why);
    auto held = std::make_shared<LockSession>(
        LockSession{.session = session, .path = znode_of(locks_, key), .key = key});
    auto made = run<LockGrant>(
        what,
        [&](Session&, const net::AttemptInfo& info) -> net::Attempt<LockGrant> {
          if (auto ready = connected(*session, info, what); !ready) {
            return std::unexpected(std::move(ready.error()));
          }
          Stat stat{};
          int rc = create_node(*session, held->path, owner, ZOO_EPHEMERAL, &stat);
          if (rc == ZNODEEXISTS) {
            // Ours when an earlier attempt made it; else someone else's.
            std::string holder(1024, '\0');
            int length = static_cast<int>(holder.size());
            rc = zoo_get(session->handle(), held->path.c_str(), 0, holder.data(), &length, &stat);
            if (rc == ZOK && stat.ephemeralOwner == session->id()) {
              rc = ZOK;
            } else if (rc == ZOK || rc == ZNONODE) {
              holder.resize(static_cast<std::size_t>(std::max(0, length)));
              return net::attempt_error(
                  Errc::locked,
                  what + ": held by another owner" +
                      (holder.empty() ? std::string() : " (" + printable(holder) + ")"));
            }
          }
          if (rc != ZOK) return std::unexpected(failure(rc, what));
          held->czxid = stat.czxid;
          return LockGrant{.token = token_text(session->id(), stat.czxid),
                           .epoch = static_cast<std::uint64_t>(stat.czxid),
                           .granted = Duration(session->negotiated())};
        },
        session.get());
    if (!made) return made;
    std::lock_guard lock(locks_mu_);
    held_[made->token] = std::move(held);
    return made;
  }

  Result<Duration> refresh_lock(const Key& key, std::string_view token, Duration) override {
    const std::string what = "zookeeper refresh lock " + key.str() + " at " + shown_;
    auto held = find_lock(key, token, what);
    if (!held) return std::unexpected(held.error());
    Session& session = *(*held)->session;
    auto kept = run<Duration>(
        what,
        [&](Session&, const net::AttemptInfo& info) -> net::Attempt<Duration> {
          if (auto ready = connected(session, info, what); !ready) {
            return std::unexpected(std::move(ready.error()));
          }
          Stat stat{};
          const int rc = zoo_exists(session.handle(), (*held)->path.c_str(), 0, &stat);
          if (rc == ZNONODE) {
            return net::attempt_error(Errc::not_found, what + ": the lock znode is gone");
          }
          if (rc != ZOK) return std::unexpected(failure(rc, what));
          if (stat.ephemeralOwner != session.id() || stat.czxid != (*held)->czxid) {
            return net::attempt_error(Errc::locked,
                                      what + ": the lock now belongs to another session");
          }
          return Duration(session.negotiated());
        },
        &session);
    if (!kept && (kept.error().code == Errc::not_found || kept.error().code == Errc::locked)) {
      forget_lock(token);
    }
    return kept;
  }

  Result<void> unlock(const Key& key, std::string_view token) override {
    const std::string what = "zookeeper unlock " + key.str() + " at " + shown_;
    auto held = find_lock(key, token, what);
    if (!held) return std::unexpected(held.error());
    forget_lock(token);
    Session& session = *(*held)->session;
    auto done = run<bool>(
        what,
        [&](Session&, const net::AttemptInfo& info) -> net::Attempt<bool> {
          if (auto ready = connected(session, info, what); !ready) {
            return std::unexpected(std::move(ready.error()));
          }
          Stat stat{};
          int rc = zoo_exists(session.handle(), (*held)->path.c_str(), 0, &stat);
          if (rc == ZOK && stat.ephemeralOwner != session.id()) rc = ZNONODE;
          if (rc == ZOK) rc = zoo_delete(session.handle(), (*held)->path.c_str(), stat.version);
          if (rc == ZOK || (rc == ZNONODE && info.may_have_applied_before)) return true;
          if (rc == ZNONODE) {
            return net::attempt_error(Errc::not_found, what + ": the lock had already ended");
          }
          return std::unexpected(failure(rc, what));
        },
        &session);
    // The session goes with the lock, whatever the answer: closing it ends
    // the lock on the server too.
    return done_void(done);
  }

 private:
  static Result<void> check_write(const Key& key, std::string_view data, const std::string& what) {
    if (key.empty()) return fail(Errc::invalid, what + ": the root is not a document");
    if (data.size() > kMaxDocumentSize) {
      return fail(Errc::invalid, what + ": the document is larger than 1 MiB");
    }
    return {};
  }

  static std::unexpected<Error> not_a_version(const std::string& what, std::string_view version) {
    return fail(Errc::conflict,
                what + ": \"" + printable(version) + "\" is not a version of this store");
  }

  const ACL_vector* acl() const {
    return digest_.empty() ? &ZOO_OPEN_ACL_UNSAFE : &ZOO_CREATOR_ALL_ACL;
  }

  net::AttemptError failure(int rc, const std::string& what) const {
    std::string message = what + ": " + zk::rc_name(rc);
    if (rc == ZNOAUTH || rc == ZAUTHFAILED) {
      return {Error{Errc::permission,
                    message + "; check the digest user and password (--user and --password-file, "
                              "or INSTANCE_GUARD_USER and INSTANCE_GUARD_PASSWORD) and the "
                              "znodes' ACL"},
              false, false};
    }
    if (rc == ZRUNTIMEINCONSISTENCY) {
      return {Error{Errc::unavailable, message +
                                           " (the server's answers came out of order: the "
                                           "client dropped its connection to " +
                                           options_.servers + ")"},
              true, true};
    }
    if (zk::rc_connection(rc) || rc == ZSESSIONEXPIRED || rc == ZINVALIDSTATE) {
      return {Error{Errc::unavailable,
                    message + " (the connection to " + options_.servers + " was lost)"},
              true, true};
    }
    if (rc == ZBADARGUMENTS) return {Error{Errc::invalid, message}, false, false};
    return {Error{Errc::unavailable, message}, false, false};
  }

  // Creates `path` with `data`; a missing parent is made first (the
  // root's znodes persistent, folders as containers) and the create tried
  // again, a few times should an empty folder be removed meanwhile.
  int create_node(Session& s, const std::string& path, std::string_view data, int mode,
                  Stat* stat) {
    int rc = ZNONODE;
    for (int race = 0; race < kMaxParentRaces && rc == ZNONODE; ++race) {
      rc = zoo_create2(s.handle(), path.c_str(), data.data(), static_cast<int>(data.size()), acl(),
                       mode, nullptr, 0, stat);
      if (rc != ZNONODE) break;
      if (const int made = make_parents(s, path); made != ZOK) return made;
    }
    return rc;
  }

  int make_parents(Session& s, const std::string& path) {
    for (auto slash = path.find('/', 1); slash != std::string::npos;
         slash = path.find('/', slash + 1)) {
      const std::string parent = path.substr(0, slash);
      if (parent.size() <= options_.root.size() && !options_.create_root) continue;
      const int mode = parent.back() == kFolderMark ? ZOO_CONTAINER : ZOO_PERSISTENT;
      const int rc = zoo_create(s.handle(), parent.c_str(), nullptr, -1, acl(), mode, nullptr, 0);
      if (rc != ZOK && rc != ZNODEEXISTS) return rc;
    }
    return ZOK;
  }

  net::Attempt<Document> read(Session& s, const std::string& path, const std::string& what) {
    // A buffer for a record's size first; a larger document is read again
    // at the size the server reported (its Stat), so a read never fills a
    // buffer of the whole 1 MiB cap. The size only grows, up to the cap.
    std::string data(4096, '\0');
    for (;;) {
      int length = static_cast<int>(data.size());
      Stat stat{};
      const int rc = zoo_get(s.handle(), path.c_str(), 0, data.data(), &length, &stat);
      if (rc == ZOK && stat.ephemeralOwner == 0 && stat.dataLength > 0 &&
          static_cast<std::size_t>(stat.dataLength) > data.size() &&
          static_cast<std::size_t>(stat.dataLength) <= kMaxDocumentSize) {
        data.assign(static_cast<std::size_t>(stat.dataLength), '\0');  // it was cut: read again
        continue;
      }
      data.resize(rc == ZOK ? static_cast<std::size_t>(std::max(0, length)) : 0);
      return document_of(rc, std::move(data), rc == ZOK ? &stat : nullptr, what);
    }
  }

  // A getData's answer (its return code, value and Stat) as a document, the
  // same for get() and get_many().
  net::Attempt<Document> document_of(int rc, std::string data, const Stat* stat,
                                     const std::string& what) const {
    if (rc == ZNONODE) return net::attempt_error(Errc::not_found, what + ": not found");
    if (rc != ZOK) return std::unexpected(failure(rc, what));
    if (stat == nullptr) {
      return net::attempt_error(Errc::malformed,
                                what + ": the server's answer has no Stat (a malformed reply)");
    }
    if (stat->ephemeralOwner != 0) {
      return net::attempt_error(Errc::malformed, what + ": the znode is not a document");
    }
    if (stat->dataLength < 0 || static_cast<std::size_t>(stat->dataLength) > kMaxDocumentSize) {
      return net::attempt_error(Errc::malformed, what + ": the stored value is larger than 1 MiB");
    }
    if (data.size() != static_cast<std::size_t>(stat->dataLength)) {
      return net::attempt_error(Errc::malformed,
                                what + ": the server answered " + std::to_string(data.size()) +
                                    " bytes for a znode of " + std::to_string(stat->dataLength) +
                                    " (a malformed reply)");
    }
    return Document{std::move(data), version_text(*stat)};
  }

  // One turn of get_many(): every key's getData in one round trip, retried
  // as a whole (attempt loop) when the connection fails under any of them.
  Result<std::vector<Result<Document>>> read_many(std::span<const Key> keys) {
    std::vector<std::string> whats;
    std::vector<std::string> paths;
    std::vector<std::optional<Result<Document>>> refused(keys.size());
    for (std::size_t i = 0; i < keys.size(); ++i) {
      whats.push_back("zookeeper get " + keys[i].str() + " at " + shown_);
      if (keys[i].empty()) {
        refused[i] = fail(Errc::invalid, whats[i] + ": the root is not a document");
        continue;
      }
      paths.push_back(znode_of(docs_, keys[i]));
    }
    const std::string what = "zookeeper get of " + std::to_string(keys.size()) + " keys (" +
                             (keys.empty() ? std::string() : keys.front().str()) +
                             (keys.size() > 1 ? ", ..." : "") + ") at " + shown_;
    using Docs = std::vector<Result<Document>>;
    return run<Docs>(what, [&](Session& s, const net::AttemptInfo& info) -> net::Attempt<Docs> {
      const auto wait = std::max(info.timeout, std::chrono::milliseconds(1));
      std::vector<zk::DataReply> replies =
          paths.empty() ? std::vector<zk::DataReply>() : s.get_all(paths, wait);
      std::size_t missing = 0;
      for (const auto& reply : replies) missing += reply.answered ? 0 : 1;
      if (missing > 0 || replies.size() != paths.size()) {
        return net::attempt_error(Errc::timeout,
                                  what + ": " + net::no_answer_within(wait) + " for " +
                                      std::to_string(missing) + " of its " +
                                      std::to_string(paths.size()) + " reads",
                                  true);
      }
      Docs docs;
      docs.reserve(keys.size());
      for (std::size_t i = 0, next = 0; i < keys.size(); ++i) {
        if (refused[i]) {
          docs.push_back(*refused[i]);
          continue;
        }
        zk::DataReply& reply = replies[next++];
        auto doc = document_of(reply.rc, std::move(reply.data),
                               reply.has_stat ? &reply.stat : nullptr, whats[i]);
        if (!doc && doc.error().retryable) return std::unexpected(std::move(doc.error()));
        docs.push_back(doc ? Result<Document>(std::move(*doc))
                           : Result<Document>(std::unexpected(std::move(doc.error().error))));
      }
      return docs;
    });
  }

  // The znode is the incarnation `v` names (same czxid): else conflict, or
  // not_found when absent.
  net::Attempt<void> same_incarnation(Session& s, const std::string& path, const Version& v,
                                      const std::string& what) {
    Stat stat{};
    const int rc = zoo_exists(s.handle(), path.c_str(), 0, &stat);
    if (rc == ZNONODE) return net::attempt_error(Errc::not_found, what + ": not found");
    if (rc != ZOK) return std::unexpected(failure(rc, what));
    if (stat.czxid != v.czxid) {
      return net::attempt_error(Errc::conflict, what + ": the document was removed and made again");
    }
    return {};
  }

  // After an unanswered attempt: the document holds exactly our bytes, one
  // write past `v`: ours.
  std::optional<std::string> ours(Session& s, const std::string& path, std::string_view data,
                                  const Version& v, const std::string& what) {
    auto doc = read(s, path, what);
    if (!doc || doc->data != data) return std::nullopt;
    const auto now = parse_version(doc->version);
    if (!now || now->czxid != v.czxid || now->data != v.data + 1) return std::nullopt;
    return doc->version;
  }

  // Waits (up to the attempt's timeout) for `s` to be connected.
  net::Attempt<void> connected(Session& s, const net::AttemptInfo& info, const std::string& what) {
    switch (s.wait_ready(info.timeout)) {
      case SessionState::connected:
        return {};
      case SessionState::connecting:
        return net::attempt_error(Errc::unavailable,
                                  what + ": no ZooKeeper server of " + options_.servers +
                                      " answered (the session lives on for its timeout)",
                                  true, info.may_have_applied_before);
      case SessionState::auth_failed:
        return std::unexpected(failure(ZAUTHFAILED, what));
      case SessionState::expired:
      case SessionState::closed:
        break;
    }
    return net::attempt_error(Errc::not_found, what + ": the ZooKeeper session expired");
  }

  // The documents' session, opened (or reopened after it expired) and
  // checked: the root exists and our identity may read it.
  net::Attempt<std::shared_ptr<Session>> documents(const net::AttemptInfo& info,
                                                   const std::string& what) {
    std::shared_ptr<Session> s;
    {
      std::lock_guard lock(docs_mu_);
      if (doc_session_ && (doc_session_->state() == SessionState::expired ||
                           doc_session_->state() == SessionState::auth_failed)) {
        doc_session_.reset();
        root_checked_ = false;
      }
      if (!doc_session_) {
        std::string why;
        doc_session_ = Session::open(options_.servers, options_.session_timeout, digest_, why);
        if (!doc_session_) return net::attempt_error(Errc::invalid, what + ": " + why);
      }
      s = doc_session_;
    }
    if (auto ready = connected(*s, info, what); !ready) {
      if (ready.error().error.code == Errc::not_found) {
        return net::attempt_error(Errc::unavailable, ready.error().error.message, true, true);
      }
      return std::unexpected(std::move(ready.error()));
    }
    std::lock_guard lock(docs_mu_);
    if (!root_checked_ && s == doc_session_) {
      if (options_.create_root) {
        if (const int rc = make_parents(*s, docs_ + "/"); rc != ZOK) {
          return std::unexpected(failure(rc, what));
        }
      }
      char byte = 0;
      int length = 1;
      Stat stat{};
      const int rc = zoo_get(s->handle(), options_.root.c_str(), 0, &byte, &length, &stat);
      if (rc != ZOK && !(rc == ZNONODE && !options_.create_root)) {
        return std::unexpected(failure(rc, what + " (reading the root " + options_.root + ")"));
      }
      root_checked_ = true;
    }
    return s;
  }

  // One operation through the one attempt loop: each attempt on the
  // documents' session (`documents`), or on a lock's own (`own`).
  template <class T, class F>
  Result<T> run(const std::string& what, F&& op, Session* own = nullptr) {
    const StoreTimeouts timeouts = timeouts_.get();
    const net::Attempts how{.retry = {.initial_backoff = options_.initial_backoff,
                                      .max_backoff = options_.max_backoff,
                                      .deadline = timeouts.retry_deadline},
                            .request_timeout = timeouts.request_timeout};
    auto attempt = [&](const net::AttemptInfo& info) -> net::Attempt<T> {
      if (own != nullptr) return op(*own, info);
      auto s = documents(info, what);
      if (!s) return std::unexpected(std::move(s.error()));
      return op(**s, info);
    };
    auto done = net::run_until_done(how, *options_.clock, attempt);
    if (!done.result) {
      Error error = std::move(done.result.error().error);
      if (done.gave_up) {
        error.message += " (gave up after " + std::to_string(done.attempts) + " attempts)";
      }
      if (error.code == Errc::unavailable && done.gave_up) {
        error.message +=
            "; check that ZooKeeper runs and accepts connections at " + options_.servers;
      }
      return std::unexpected(std::move(error));
    }
    return std::move(*done.result);
  }

  Result<std::shared_ptr<LockSession>> find_lock(const Key& key, std::string_view token,
                                                 const std::string& what) {
    const auto t = parse_token(token);
    if (!t) return fail(Errc::invalid, what + ": not a lock token of this store");
    std::lock_guard lock(locks_mu_);
    const auto it = held_.find(std::string(token));
    if (it == held_.end() || it->second->key != key) {
      return fail(Errc::not_found,
                  what + ": no lock of this store holds that token (released, lost or ended)");
    }
    if (it->second->session->state() == SessionState::expired) {
      held_.erase(it);
      return fail(Errc::not_found, what + ": the lock's session expired: the lock is lost");
    }
    return it->second;
  }

  void forget_lock(std::string_view token) {
    std::shared_ptr<LockSession> gone;  // closed outside the mutex
    std::lock_guard lock(locks_mu_);
    const auto it = held_.find(std::string(token));
    if (it == held_.end()) return;
    gone = std::move(it->second);
    held_.erase(it);
  }

  ZookeeperStoreOptions options_;
  const std::string shown_;
  const std::shared_ptr<Logger> log_;
  const std::string digest_;  // "user:password", or empty
  const std::string docs_;    // <root>/docs
  const std::string locks_;   // <root>/locks
  TunedTimeouts timeouts_;

  std::mutex docs_mu_;
  std::shared_ptr<Session> doc_session_;  // guarded by docs_mu_
  bool root_checked_ = false;             // guarded by docs_mu_

  std::mutex locks_mu_;
  std::map<std::string, std::shared_ptr<LockSession>> held_;  // by token; guarded by locks_mu_
};

// '/' and segments of [A-Za-z0-9._-], none "." or "..", no trailing '/',
// and not ZooKeeper's own /zookeeper.
bool valid_root(std::string_view root) {
  if (!root.starts_with('/') || root.size() < 2 || root.ends_with('/')) return false;
  if (root == "/zookeeper" || root.starts_with("/zookeeper/")) return false;
  std::size_t begin = 1;
  while (begin <= root.size()) {
    const auto end = std::min(root.find('/', begin), root.size());
    const auto segment = root.substr(begin, end - begin);
    if (segment.empty() || segment == "." || segment == "..") return false;
    if (!std::ranges::all_of(segment, [](unsigned char c) {
          return std::isalnum(c) || c == '.' || c == '_' || c == '-';
        })) {
      return false;
    }
    begin = end + 1;
  }
  return true;
}

}  // namespace

Result<std::shared_ptr<Store>> make_zookeeper_store(ZookeeperStoreOptions options) {
  if (options.servers.empty() || std::ranges::any_of(options.servers, [](unsigned char c) {
        return c <= 0x20 || c >= 0x7F;
      })) {
    return fail(Errc::invalid, "zookeeper: the server list is empty or holds spaces");
  }
  if (!valid_root(options.root)) {
    return fail(Errc::invalid, "zookeeper root \"" + printable(options.root) +
                                   "\": must be '/' and segments of [A-Za-z0-9._-] (no '.' or "
                                   "'..', no trailing '/', not /zookeeper)");
  }
  if (options.user.empty() != options.password.empty()) {
    return fail(Errc::invalid,
                "zookeeper: digest authentication needs both a user and a password (--user and "
                "--password-file, or INSTANCE_GUARD_USER and INSTANCE_GUARD_PASSWORD)");
  }
  if (options.user.find(':') != std::string::npos) {
    return fail(Errc::invalid, "zookeeper: a digest user name cannot hold ':'");
  }
  return std::make_shared<ZookeeperStore>(std::move(options));
}

}  // namespace instance
