// The etcd store: instance records in an etcd v3 cluster, over the v3 JSON
// gateway (`/v3/...`, etcd 3.4 and later) with libcurl.
//
// Layout: a key maps to the etcd key `<prefix>/<escaped key>` (the prefix
// from the options, "/instance-guard" by default); list() is one range read
// (keys only) over `<prefix>/<escaped prefix>/`. Native locks live at
// `<prefix>#lock/<escaped key>`, outside every document range ('#' never
// appears in an escaped key nor in a prefix), so get() of a lock key is
// not_found and no listing shows a lock. A listed etcd key under the prefix
// that is not a canonical escaped key fails the listing (Errc::malformed);
// nothing is silently dropped.
//
// Versions are mod_revisions (decimal). create = txn(create_revision == 0 ->
// put); replace_if / remove_if = txn(mod_revision == version -> put /
// delete); when the compare fails, the same txn reads the key, so one request
// tells conflict from not_found. A version that is not a positive decimal
// never matches (Errc::conflict).
//
// Native lease: lock = grant an etcd lease of ceil(ttl) seconds, then
// txn(create_revision(lock) == 0 -> put lock with that lease); the owner
// string is the lock's value. The token is "<lease id>:<revision of that
// put>", and the grant's epoch is that revision: a fencing number assigned by
// the server, larger for every later lock. refresh_lock = lease keep-alive
// (TTL 0 in the answer: lease gone, Errc::not_found) and then a read of the
// lock key, which must still carry our lease (else Errc::locked, or
// not_found when deleted). unlock = revoke the lease (which deletes the
// lock key); not_found when it had already expired. etcd keeps leases across
// a restart and extends them when a leader is elected, so a holder renews
// after a short outage. Expiry is judged on the server's clock
// (server_clock); the ttl given to refresh_lock cannot change a lease's TTL.
// The time granted is the TTL the grant and each keep-alive answered (etcd
// raises a TTL below its minimum).
//
// Endpoints: the store talks to one member at a time, the one that answered
// last. An attempt that gets no answer (connection refused, reset, timed
// out) or an answer a retry may cure from elsewhere (Unavailable, "not
// leader", "leader changed", a proposal timed out) moves the next attempt
// to the next endpoint in the list, round the list as often as the
// operation's retry deadline allows; an error after every endpoint failed
// names each one tried and what it said. A lease belongs to the cluster,
// not to the member that granted it, so a keep-alive sent to another member
// renews the same lease and a holder keeps its lock across the switch. A
// member cut off from the majority answers nothing that needs agreement,
// so a claim survives a switch only while a majority of the members is up:
// without one, renewals fail and the guard fences itself within its ttl
// (capabilities().agreement says so in the guarantee line).
//
// Requests: one libcurl handle per store, reused under a mutex (one
// keep-alive connection, requests serialised). Transport failures and
// gRPC Unavailable / DeadlineExceeded answers are retried with exponential
// backoff and equal jitter until `retry_deadline` (on `clock`), or the
// current StartupBudget's time left when less (instance/sdk/startup_budget.hpp);
// then Errc::unavailable (or Errc::timeout). A write whose earlier attempt may have reached the
// server is resolved on retry: a failed compare that our own earlier attempt explains (the key
// holds exactly our bytes, or our lease) counts as success.
//
// Auth: with a user and password, POST /v3/auth/authenticate gives a token,
// sent as the Authorization header and renewed once when the server calls it
// invalid (simple tokens expire). A token given directly is sent as is.
// Secrets live only in the options and the store: never logged, never in
// describe() or an error, never in a URL or a process argument.
//
// Clock: every reply's Date header (etcd's HTTP gateway sends one) is
// compared with `clock->wall()`; one warning is logged when they differ by
// more than `max_clock_skew`. etcd judges its leases on its own clock, but
// the records of verify and announce expire on the guards' clocks.
//
// Size: writes over kMaxDocumentSize are refused (Errc::invalid) before any
// request; a stored value over it reads as Errc::malformed.
//
// Thread safety: a store may be used from any number of threads.
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "instance/clock.hpp"
#include "instance/error.hpp"
#include "instance/export.hpp"
#include "instance/logger.hpp"
#include "instance/open_store.hpp"
#include "instance/sdk/store_module.hpp"
#include "instance/store.hpp"

namespace instance {

struct EtcdStoreOptions {
  // http:// or https:// URLs of the cluster's client endpoints, no path:
  // {"http://10.0.0.1:2379", "http://10.0.0.2:2379"}; one at least, all of
  // one scheme. Requests go to one of them and move to the next when it
  // does not answer or answers that it cannot serve (see "Endpoints" above).
  std::vector<std::string> endpoints;
  // Every key lives under this etcd key prefix: '/' followed by '/'-separated
  // segments of [A-Za-z0-9._~-] ("." and ".." refused), no trailing '/'.
  std::string prefix = "/instance-guard";

  // etcd's own auth: a user and password (exchanged for a token), or a token.
  std::string user;
  std::string password;  // never logged
  std::string token;     // never logged

  std::filesystem::path ca_file;      // extra CA bundle (PEM) for https; empty: the system's
  std::filesystem::path client_cert;  // TLS client certificate (PEM), for --client-cert-auth
  std::filesystem::path client_key;   // its private key (PEM); empty: in client_cert
  bool insecure = false;              // skip TLS verification (warned about at creation)

  // Upper bounds: a guard shortens retry_deadline and request_timeout to its
  // renewal period (Store::tune; StoreTimeouts has the rule).
  std::chrono::milliseconds connect_timeout{3000};   // per connection attempt
  std::chrono::milliseconds request_timeout{10000};  // per request, whole transfer
  std::chrono::milliseconds retry_deadline{10000};   // all attempts of one operation
  std::chrono::milliseconds initial_backoff{50};     // first retry delay (before jitter)
  std::chrono::milliseconds max_backoff{1000};       // retry delay cap
  // Warn (once) when the server's Date differs from clock->wall() by more
  // (the server's time is taken as anywhere in the second Date names); a
  // guard sets it to its max_skew (Store::tune).
  std::chrono::nanoseconds max_clock_skew = std::chrono::seconds(12);
  // Retry deadlines and pauses run on it (tests inject a FakeClock).
  std::shared_ptr<Clock> clock;  // the system clock when null

  std::shared_ptr<Logger> logger;  // null: discard
};

// Parses a store URL into options:
//   etcd://host[:port][,host[:port]...][/prefix]  -> http://host:port, ...
//   etcds://host[:port][,host[:port]...][/prefix] -> https://host:port, ...
// (port 2379 by default; an IPv6 address in brackets, [::1]:2379); a bad
// entry is named by its place in the list, an entry given twice refused.
// Credentials: a password from options.password_file or
// INSTANCE_GUARD_PASSWORD with the user from options.user,
// INSTANCE_GUARD_USER or the URL's user name; or a token from
// options.token_file or INSTANCE_GUARD_TOKEN. Files win over the
// environment; a token and a password together are refused, and so is a
// password in the URL (no message echoes it). Also takes ca_file,
// client_cert, client_key, insecure and logger. The timeouts follow the
// guard that uses the store (Store::tune: retry_deadline ttl/3, between 1 s
// and 10 s, so an operation never outlasts a renewal period).
INSTANCE_EXPORT Result<EtcdStoreOptions> parse_etcd_url(std::string_view url,
                                                        const OpenOptions& options);

// Builds the store; sends no request. Errc::invalid for a bad endpoint or
// prefix, a user without a password, or an unreadable ca_file, client_cert
// or client_key.
INSTANCE_EXPORT Result<std::shared_ptr<Store>> make_etcd_store(EtcdStoreOptions options);

// The etcd store family for open_store(): its schemes (etcd://, etcds://). A
// program that links this store registers it with register_store_module()
// (instance/sdk/store_module.hpp); the loadable module answers the same object.
INSTANCE_EXPORT const StoreModule& etcd_store_module();

}  // namespace instance
