// The ZooKeeper store: instance records as znodes of a ZooKeeper ensemble,
// through the C client (Debian: libzookeeper-mt-dev).
//
// Layout, under the root znode (the URL's path, "/instance-guard" by
// default): a document `a/b` is the znode `a~/b` under the root's child
// znode named "docs"; every folder is a container znode whose name ends in
// '~' (never in a canonical key segment), so one getChildren of a folder
// tells documents from folders and the server removes a folder once it is
// empty. A native lock on `a/b` is
// the ephemeral znode `<root>/locks/a~/b`, outside the documents' tree, so
// no listing shows it and get() of its key is not_found.
//
// Versions: "<czxid>.<data version>" of the document's znode. create() is a
// plain create (ZNODEEXISTS: already_exists); replace_if / remove_if read
// the znode's stat, refuse a version of another incarnation (czxid), then
// setData / delete on the data version, which the server compares
// atomically. A version that does not parse never matches (Errc::conflict).
//
// Native lease: lock() opens a session of its own, with the ttl asked as its
// session timeout (the server fits it between its minSessionTimeout and
// maxSessionTimeout), and creates the ephemeral lock znode in it, holding the
// owner text. The grant's time is the session timeout the server agreed; its
// epoch the znode's creation zxid, which grows across every holder. The
// session's own heartbeat keeps the lock: refresh_lock() asks the session's
// state and reads the znode (still ours: same session, same czxid). A
// disconnected session is not lost (the server keeps it for its timeout):
// refresh_lock answers Errc::unavailable and is retried; an expired one is
// lost (Errc::not_found), as is a znode gone or someone else's. unlock()
// deletes the znode and closes the session; destroying the store closes every
// session it opened, which ends their locks at once. A holder that dies
// without closing loses its lock when the server expires its session.
// Expiry is judged on the server's clock.
//
// Auth: ZooKeeper's digest scheme. With a user and password the store adds
// them to every session and creates its znodes with the creator-only ACL; a
// session whose identity may not read the root is refused
// (Errc::permission). The password lives only in the options and the store.
//
// Requests: one session for documents per store, reopened when it expires.
// Connection losses are retried with backoff until `retry_deadline` (on
// `clock`), or the current StartupBudget's time left when less.
//
// Size: writes over kMaxDocumentSize are refused before any request; the
// server must accept requests of a little over 1 MiB (jute.maxbuffer, whose
// default is 1 MiB less one byte: docs/zookeeper.md).
//
// Thread safety: a store may be used from any number of threads.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "instance/clock.hpp"
#include "instance/error.hpp"
#include "instance/export.hpp"
#include "instance/logger.hpp"
#include "instance/open_store.hpp"
#include "instance/sdk/store_module.hpp"
#include "instance/store.hpp"

namespace instance {

struct ZookeeperStoreOptions {
  // The ensemble: "host:port" entries separated by ','.
  std::string servers = "127.0.0.1:2181";
  // Every znode lives under this path: '/' and segments of [A-Za-z0-9._-],
  // no trailing '/'; created (with its parents) when missing.
  std::string root = "/instance-guard";
  // Create the root (and its parents) when missing; off for a store opened
  // read-only, which then reads a missing root as empty.
  bool create_root = true;

  // Digest authentication; both or neither. Never logged.
  std::string user;
  std::string password;

  // The documents' session asks for this timeout.
  std::chrono::milliseconds session_timeout{10000};
  // Upper bounds: a guard shortens retry_deadline and request_timeout to its
  // renewal period (Store::tune).
  std::chrono::milliseconds request_timeout{5000};  // one attempt, connecting included
  std::chrono::milliseconds retry_deadline{10000};  // all attempts of one operation
  std::chrono::milliseconds initial_backoff{50};    // first retry delay (before jitter)
  std::chrono::milliseconds max_backoff{1000};      // retry delay cap

  // Retry deadlines and pauses run on it (tests inject a FakeClock).
  std::shared_ptr<Clock> clock;    // the system clock when null
  std::shared_ptr<Logger> logger;  // null: discard
};

// Parses `zk://host[:port][,host[:port]...][/root/path]` (port 2181 by
// default). Credentials for the digest scheme: the password from
// options.password_file or INSTANCE_GUARD_PASSWORD (the file wins), the user
// from options.user, INSTANCE_GUARD_USER or the URL's user name. A password
// in the URL, a token, a user without a password and a password without a
// user are refused (no message echoes a secret). The session timeout of a
// lock follows the ttl it is asked for; the other timeouts follow the guard
// that uses the store (Store::tune), never the URL.
INSTANCE_EXPORT Result<ZookeeperStoreOptions> parse_zookeeper_url(std::string_view url,
                                                                  const OpenOptions& options);

// Builds the store; connects nothing yet. Errc::invalid for an empty or
// malformed server list, a bad root, or a user without a password.
INSTANCE_EXPORT Result<std::shared_ptr<Store>> make_zookeeper_store(ZookeeperStoreOptions options);

// The zookeeper store family for open_store(): its scheme (zk://). A program
// that links this store registers it with register_store_module()
// (instance/sdk/store_module.hpp); the loadable module answers the same object.
INSTANCE_EXPORT const StoreModule& zookeeper_store_module();

}  // namespace instance
