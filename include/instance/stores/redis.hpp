// The Redis store: instance records in a Redis server, over hiredis.
//
// Layout, under a key prefix (default "instance-guard:"; the `prefix` URL
// parameter), with <key> the Key's escaped form (bytes [A-Za-z0-9._%-/]
// only, so never a ':' or a glob character):
//   <prefix>doc:<key>     a hash {data: the document, ver: its version}
//   <prefix>lock:<key>    a native lease: "<epoch>:<nonce>", expiring (PX)
//   <prefix>epoch:<key>   the lease's grant counter (INCR)
// A version is 128 random bits drawn by the writer for every write, so it is
// never reused, not even after the server lost its data in a restart.
//
// Requests: get, create, replace_if, remove_if, lock, refresh_lock and
// unlock are Lua scripts (EVAL), each atomic on the server; replace is one
// HSET, remove one DEL, list a SCAN with MATCH `<prefix>doc:<prefix key>/*`
// (the configured prefix glob-escaped). A listed name that is not a
// canonical key fails the listing with Errc::malformed; a listing never
// silently drops an entry. A key holding another Redis type is malformed.
//
// Native leases: lock = one script that, when the lock key is absent,
// INCRs the epoch key and sets the lock (SET NX PX ttl) to "<epoch>:<nonce>",
// the token; Errc::locked when someone else holds it. refresh_lock and
// unlock compare the token in a script (PEXPIRE / DEL): absent ->
// Errc::not_found, someone else's -> Errc::locked (refresh) or not_found
// (unlock). The grant's epoch is the one the token carries. Expiry is judged on
// the server's clock (server_clock). Lock and epoch keys never show in
// list(), and get() of a lock's key is not_found.
//
// Persistence decides what a server restart does to a lease: with
// `appendonly yes` (and `appendfsync always` against a crash) leases, epochs
// and records survive and the holder simply renews; without it the restart
// ends every lease, the holder's next refresh finds it gone (not_found: the
// claim is lost and the tool stops its child), and the epoch counter starts
// again (the guard's lease document, lost with it, cannot keep it up). The
// first capabilities() call logs a warning when the server runs without
// append-only persistence, and one when the server's clock (TIME) differs
// from clock->wall() by more than max_clock_skew.
//
// Retries: a lost or refused connection, a timeout and the replies LOADING,
// BUSY, TRYAGAIN and MASTERDOWN are retried with a fresh connection and
// exponential backoff (equal jitter) until `retry_deadline` (on `clock`), or
// the current StartupBudget's time left when less
// (instance/sdk/startup_budget.hpp), runs out; a later attempt's socket timeouts
// are at most the time left. Then Errc::unavailable (Errc::timeout when the
// last attempt timed out), with a message saying what to check. A write whose earlier attempt may
// have reached the server is resolved on retry: create, replace_if and lock recognise their own
// write by its fresh version or nonce, and remove / remove_if count "already gone" as done.
//
// Errors: NOAUTH / WRONGPASS / NOPERM -> Errc::permission, WRONGTYPE ->
// Errc::malformed, OOM -> Errc::no_space, an unknown command (no Lua) ->
// Errc::unsupported, others -> Errc::unavailable. Messages name the
// operation, describe() and the key; never the password (a server reply is
// scrubbed of it, too).
//
// Sentinel (`sentinels` non-empty, `master_name` set): host and port are not
// used; every new connection asks the Sentinels in turn (SENTINEL
// get-master-addr-by-name) for the master's address, connects and checks
// ROLE is master, so a stale Sentinel answer never sends a write to a
// replica. A lost connection, READONLY, LOADING or MASTERDOWN drops the
// connection and asks the Sentinels again within the operation's deadline.
// Replication is asynchronous: a master that fails before a lock or epoch
// write reached its replica takes the write with it. The promoted replica
// may then grant the lock to another guard while the old holder runs on
// until its next renewal fails (not_found: it fences itself), and the epoch
// counter may repeat an epoch already granted. capabilities().agreement says
// so in the guarantee line.
//
// Not supported: TLS (hiredis 0.14 has none: rediss:// is refused), Redis
// Cluster (lock and epoch keys would sit in different slots).
//
// Thread safety: a store may be used from any number of threads; requests
// are serialised on its one connection (hiredis contexts are not
// thread-safe).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "instance/clock.hpp"
#include "instance/error.hpp"
#include "instance/export.hpp"
#include "instance/logger.hpp"
#include "instance/open_store.hpp"
#include "instance/sdk/store_module.hpp"
#include "instance/store.hpp"

namespace instance {

// Counters a store updates as it works (tests, benchmarks).
struct RedisStats {
  std::atomic<std::uint64_t> requests{0};     // commands sent, retries included
  std::atomic<std::uint64_t> connections{0};  // connections opened
  std::atomic<std::uint64_t> retries{0};      // attempts after the first
};

struct RedisStoreOptions {
  std::string host = "127.0.0.1";  // a name or an IP address (IPv6 without brackets)
  int port = 6379;
  int db = 0;  // SELECT after connecting
  // Sentinel discovery: the Sentinels' addresses and the master's name
  // (redis+sentinel://); empty: connect to host:port.
  std::vector<std::pair<std::string, int>> sentinels;
  std::string master_name;
  std::string prefix = "instance-guard:";  // every key this store touches starts with it

  // AUTH: `password` alone for the default user, `user` too for an ACL user
  // (Redis 6+). Never logged, never in describe() or an error message.
  std::string user;
  std::string password;

  // Upper bounds: a guard shortens retry_deadline and command_timeout to
  // its renewal period (Store::tune; StoreTimeouts has the rule).
  std::chrono::milliseconds connect_timeout{2000};  // per connection attempt
  std::chrono::milliseconds command_timeout{5000};  // per command (socket timeouts)
  std::chrono::milliseconds retry_deadline{10000};  // all attempts of one operation
  std::chrono::milliseconds initial_backoff{50};    // first retry delay (before jitter)
  std::chrono::milliseconds max_backoff{1000};      // retry delay cap

  // Warn (once) when the server's TIME differs from clock->wall() by more;
  // a guard sets it to its max_skew (Store::tune).
  std::chrono::nanoseconds max_clock_skew = std::chrono::seconds(12);
  // Retry deadlines and pauses run on it (tests inject a FakeClock).
  std::shared_ptr<Clock> clock;  // the system clock when null

  std::shared_ptr<Logger> logger;     // null: discard
  std::shared_ptr<RedisStats> stats;  // null: not counted
};

// Parses `redis://[user@]host[:port][/db][?prefix=...]` (host a name, an
// IPv4 address or [IPv6]; port 6379 and db 0 by default; prefix
// percent-decoded, default "instance-guard:").
// Credentials: the password from options.password_file or
// INSTANCE_GUARD_PASSWORD (the file wins); the user from options.user,
// INSTANCE_GUARD_USER or the URL's user name, and none for Redis's default
// user. A password in the URL (`redis://:pw@host`, `redis://u:pw@host`) is
// refused with Errc::invalid pointing at the file and the environment: the
// URL shows in `ps`, shell history and logs; no message ever echoes it. A
// user without a password, a token, and `rediss://` (no TLS here) are
// refused too.
// `redis+sentinel://s1[:port],s2[:port]/<master name>[/db][?prefix=...]`:
// Sentinels (port 26379 by default), the master's name as Sentinel knows it
// (monitor <name>), then the database number as in redis://. The password
// is the data servers' (the Sentinels are asked without one). Also takes the logger from `options`.
// The timeouts follow the guard that uses the store (Store::tune), never the URL.
INSTANCE_EXPORT Result<RedisStoreOptions> parse_redis_url(std::string_view url,
                                                          const OpenOptions& options);

// Builds the store; sends no command (the server may be down at start: the
// first operation then fails with Errc::unavailable after its retries).
// Errc::invalid for an empty host, a port outside 1..65535 or a negative db.
INSTANCE_EXPORT Result<std::shared_ptr<Store>> make_redis_store(RedisStoreOptions options);

// The redis store family for open_store(): its schemes (redis://, rediss://). A
// program that links this store registers it with register_store_module()
// (instance/sdk/store_module.hpp); the loadable module answers the same object.
INSTANCE_EXPORT const StoreModule& redis_store_module();

// The URL describe() shows for these options: redis://host:port/db?prefix=...
// or redis+sentinel://s1:port,s2:port/name/db?prefix=... (prefix
// percent-encoded), never a user or password.
INSTANCE_EXPORT std::string describe_redis(const RedisStoreOptions& options);

// host:port, or [v6]:port.
INSTANCE_EXPORT std::string redis_address(const std::string& host, int port);

}  // namespace instance
