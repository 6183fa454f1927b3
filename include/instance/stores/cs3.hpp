// The CS3 store: instance records in an OpenCloud (or oCIS, or reva) space,
// reached through the gateway's own gRPC API (cs3.gateway.v1beta1.GatewayAPI)
// with a service account, as services running beside OpenCloud do.
//
// Session: on first use the store authenticates (Authenticate, type
// "serviceaccounts"), sends the token as `x-access-token` metadata on every
// later call, and authenticates again when a call answers
// CODE_UNAUTHENTICATED (or the data gateway HTTP 401): an expired token costs
// one extra round trip, never an error. It then finds the space by id
// (ListStorageSpaces, filter TYPE_ID) and, unless allow_user_space, refuses
// a space end users can reach: a personal space, or one with any grant
// (member) other than the service account itself (ListGrants on its root).
// That refusal is Errc::invalid, with a message naming the option to turn
// the check off.
//
// Layout: a key maps to the path `./<folder>/<escaped segments>` relative to
// the space root (folder default ".instance-guard"): the server holds exactly
// the names the directory store would. A listed name that is not a canonical
// escaped segment fails the listing with Errc::malformed.
//
// Operations: get = InitiateFileDownload + HTTP GET to the data gateway
// (X-Reva-Transfer and x-access-token headers); writes = InitiateFileUpload
// (protocol "simple") + HTTP PUT; create sends if_not_exist, and a creation
// that loses a race at upload end (exclusive create: HTTP 412) is
// Errc::already_exists; replace_if sends if_match (the exact etag, quotes
// included), checked again by the server at upload end, so it is a real
// compare-and-set; list = ListContainer, folder by folder; remove = Delete.
// Missing folders are made with CreateContainer. remove_if has no CS3
// condition of its own: it locks the document (SetLock, 30 s), compares the
// etag (Stat), deletes with the lock id and unlocks; every other write is
// refused by the server while the lock is held, so it is atomic too.
// An empty document is written with TouchFile (a simple PUT of 0 bytes is
// refused by reva).
//
// Capabilities: versions (etags). conditional_writes and native_lease are
// probed on first use with scratch documents under `.instance-guard-probe/`:
// conditional_writes when a wrong if_match is refused, a create of an
// existing document is refused and the right if_match succeeds (and locks
// work, which remove_if needs); native_lease when SetLock works and a second
// SetLock is refused. A gateway that cannot be asked (down, or refusing the
// account) is not judged: capabilities() answers what a CS3 gateway
// normally offers, uncached, and replace_if, remove_if and lock probe again
// first and fail with the probe's error, so they never run unprobed and a
// guard reports the real failure. server_clock stays false: CS3 lock expirations
// are absolute times computed on our clock and judged on the server's, so
// clock skew shifts them (a warning is logged when the data gateway's Date
// differs from ours by more than max_clock_skew).
//
// Native leases (lock / refresh_lock / unlock): SetLock / RefreshLock /
// Unlock (LOCK_TYPE_EXCL, app "instance-guard", expiration = now + ttl) on
// the document `./<folder>/.instance-guard-locks/<key>`, made once with
// TouchFile (CS3 locks exist only on existing files). list() of the base
// skips that folder and the probe folder; keys under them are reserved.
// Already locked (FAILED_PRECONDITION, LOCKED) -> Errc::locked; a refresh
// of a lock that expired or was taken -> Errc::not_found / Errc::conflict.
//
// Retries: gRPC UNAVAILABLE / DEADLINE_EXCEEDED, CS3 CODE_TOO_EARLY,
// CODE_UNAVAILABLE, CODE_RESOURCE_EXHAUSTED, CODE_LOCKED on a document
// (someone's remove_if holds it a moment), HTTP 425, 429 and 5xx but 501 and
// 507, and transport errors are retried with exponential backoff and equal
// jitter until retry_deadline (on `clock`), or the current StartupBudget's
// time left when less (instance/sdk/startup_budget.hpp); then
// Errc::unavailable (or timeout).
//
// Secrets: the service account secret and every token (access token,
// transfer tokens) live only in memory; never logged, never in describe()
// or an error message, never in a URL or a process argument.
//
// Thread safety: a store may be used from any number of threads.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
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

// Counters a store updates as it works (tests, benchmarks).
struct Cs3Stats {
  std::atomic<std::uint64_t> rpcs{0};             // gRPC calls sent, retries included
  std::atomic<std::uint64_t> http_requests{0};    // data gateway requests
  std::atomic<std::uint64_t> authentications{0};  // Authenticate calls
  std::atomic<std::uint64_t> retries{0};          // attempts after the first
};

struct Cs3StoreOptions {
  std::string gateway;                // "host:port" of the gateway's gRPC endpoint
  bool tls = false;                   // gRPC over TLS (cs3s://)
  std::filesystem::path ca_file;      // extra CA bundle (PEM), gRPC and data gateway
  std::filesystem::path client_cert;  // TLS client certificate (PEM), gRPC and data gateway
  std::filesystem::path client_key;   // its private key (PEM); empty: in client_cert
  // Skip TLS verification of the gateway (gRPC) and the data gateway
  // (warned about).
  bool insecure = false;

  // The space: "<storageid>$<spaceid>" or "<spaceid>" (the `!` node form
  // is refused).
  std::string space_id;
  // The folder in the space that holds the keys: segments joined by '/',
  // each a plain name (no "." or ".."). Created on the first write.
  std::string folder = ".instance-guard";

  std::string client_id;      // service account id
  std::string client_secret;  // service account secret; never logged

  // Accept a space end users can reach (personal, or with members).
  bool allow_user_space = false;

  // Upper bounds: a guard shortens retry_deadline and call_timeout to its
  // renewal period (Store::tune; StoreTimeouts has the rule).
  std::chrono::milliseconds call_timeout{10000};    // per gRPC call or HTTP request
  std::chrono::milliseconds retry_deadline{20000};  // all attempts of one operation
  std::chrono::milliseconds initial_backoff{50};
  std::chrono::milliseconds max_backoff{2000};

  // Warn (once) when the data gateway's Date differs from clock->wall() by
  // more (Date has whole seconds: the gateway's time is taken as anywhere in
  // the second it names); a guard sets it to its max_skew (Store::tune).
  std::chrono::nanoseconds max_clock_skew = std::chrono::seconds(12);
  std::shared_ptr<Clock> clock;  // the system clock when null

  // Probe conditional writes and locks on first use; when false they are
  // declared without asking.
  bool probe_capabilities = true;
  // The caller only reads (status): capabilities() answers capabilities_not_probed()
  // instead of probing (the probe writes).
  bool read_only = false;

  std::shared_ptr<Logger> logger;   // null: discard
  std::shared_ptr<Cs3Stats> stats;  // null: not counted
};

// Parses a store URL into options:
//   cs3://host:port/<space-id>[/folder]           plain gRPC
//   cs3s://host:port/<space-id>[/folder]          gRPC over TLS
//   opencloud+cs3://..., opencloud+cs3s://...     the same
// (space id and folder percent-decoded; folder default ".instance-guard").
// Query: `allow-user-space=1` turns the space check off.
// Credentials: the service account id from options.user,
// INSTANCE_GUARD_CS3_ID or INSTANCE_GUARD_USER; its secret from
// options.password_file, the file named by INSTANCE_GUARD_CS3_SECRET_FILE,
// INSTANCE_GUARD_CS3_SECRET or INSTANCE_GUARD_PASSWORD (first found wins).
// User info in the URL is refused. Also takes ca_file, insecure and logger
// from `options`. The timeouts and the skew threshold follow the guard that
// uses the store (Store::tune).
INSTANCE_EXPORT Result<Cs3StoreOptions> parse_cs3_url(std::string_view url,
                                                      const OpenOptions& options);

// Builds the store; sends no request (the gateway may be down at start).
// Errc::invalid for a bad gateway, space id or folder, a missing id or
// secret, or an unreadable ca_file.
INSTANCE_EXPORT Result<std::shared_ptr<Store>> make_cs3_store(Cs3StoreOptions options);

// The cs3 store family for open_store(): its schemes (cs3://, cs3s://, opencloud+cs3://,
// opencloud+cs3s://). A program that links this store registers it with register_store_module()
// (instance/sdk/store_module.hpp); the loadable module answers the same object.
INSTANCE_EXPORT const StoreModule& cs3_store_module();

}  // namespace instance
