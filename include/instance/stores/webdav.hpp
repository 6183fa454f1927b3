// The WebDAV store: instance records on a WebDAV server (Apache mod_dav,
// lighttpd mod_webdav, sabre/dav, an OpenCloud Space, ...), over libcurl.
//
// Layout: a key maps to `<base>/<escaped segments>`. The escaped form is
// used as the file name on the server (its '%' sent as %25), so the server
// holds exactly the names the directory store would: a listed name that is
// not a canonical escaped segment (`..`, a decoded '/', bytes outside
// [A-Za-z0-9._-], non-UTF-8, an href outside the base) fails the listing
// with Errc::malformed; a listing never silently drops an entry.
//
// Requests: one libcurl handle per store, reused under a mutex, so calls are
// serialised and share one keep-alive connection (a claim costs one TCP
// connection while the server keeps it open). get = GET; create = PUT with
// `If-None-Match: *`; replace = PUT; replace_if/remove_if = PUT/DELETE with
// `If-Match`; list = PROPFIND Depth 1, one per folder level. Missing folders
// are created with MKCOL when a PUT reports them missing (409; 404 from
// rclone and sabre/dav, except for an If-Match PUT), then remembered. Before
// the first write under a base URL two or more folders deep, a PROPFIND
// Depth 0 checks that the base or its parent exists (see create_path). When
// a PUT answers without an ETag (Apache), the document is
// read back once to learn its version; if the bytes read are not the bytes
// written, someone wrote in between and the version returned never matches.
//
// Retries: transport errors, 5xx (but 501/505/507) and 425 Too Early are
// retried with exponential backoff and equal jitter until `retry_deadline`
// (on `clock`), or the current StartupBudget's time left when less
// (instance/sdk/startup_budget.hpp), runs out; then Errc::unavailable (or
// Errc::timeout when the last attempt timed out). A write whose first attempt may have reached the
// server is resolved on retry (a 412 or 404 that our own earlier attempt
// explains counts as success).
//
// Capabilities are probed on the first capabilities() (or replace_if /
// remove_if / lock) call with a scratch document under `.instance-guard-probe/`:
// conditional_writes is declared only when the server refuses
// `If-None-Match: *` on an existing document, refuses a wrong `If-Match`
// (PUT and DELETE), accepts the right one, and is not Apache httpd. A server
// that ignores the headers (nginx, rclone; OpenCloud for If-None-Match),
// hands out weak ETags, or checks them without a lock (Apache mod_dav: two
// concurrent conditional PUTs both succeed about half the time in the
// tests' race) is downgraded with a warning, and replace_if / remove_if then
// answer Errc::unsupported. A server that cannot be reached is not judged:
// capabilities() answers plain operations and probes again next time.
// create() always sends `If-None-Match: *`; until the probe has shown the
// server refuses it on an existing document, it also checks first (GET).
//
// Native leases (lock / refresh_lock / unlock): LOCK (exclusive write lock,
// Depth: 0, `Timeout: Second-N` with N = ceil(ttl) >= 1, the owner string
// XML-escaped in <owner>) of `<base>/.instance-guard-locks/<key>`, never the
// key's own URL, so get() of the key is not_found and list() of any prefix
// but `.instance-guard-locks` never shows a lease (list() of the base skips
// that folder; keys under it are reserved). The lock URL is first made an
// empty document (PUT If-None-Match: *, once per store): a LOCK of an
// unmapped URL makes a lock-null resource that Apache lists while locked and
// lighttpd keeps as an empty file. The token is the Lock-Token header (or the
// lockdiscovery locktoken href); 423 -> Errc::locked. refresh = LOCK with
// `If: (<token>)` and Timeout: 412/409 -> conflict, 423 -> locked, 404 ->
// not_found (all "lost"). unlock = UNLOCK with `Lock-Token: <token>`;
// 400/404/409/412 -> not_found. Tokens that are not printable URIs never
// reach a header. The time granted is the timeout the LOCK or refresh reply's
// lockdiscovery names (nginx grants its lock zone's own timeout whatever was
// asked; Infinite -> kForever; none -> what was asked). The probe locks a scratch document, checks
// that a second LOCK is refused with 423 and unlocks it; native_lease (and server_clock) are
// declared only when that holds and the server is neither lighttpd (1.4.69 never expires a lock and
// refreshes with any token) nor Apache httpd (mod_dav grants concurrent LOCKs of one resource to
// several clients: measured in the tests). A server without LOCK (405/501) is noted at info level;
// other failures are warned about. With probe_capabilities false every capability is declared
// without asking.
//
// Size: writes over kMaxDocumentSize are refused (Errc::invalid) before any
// request; a read stops as soon as the body passes the cap (Errc::malformed,
// the document is left alone).
//
// Secrets: the password or token lives only in this options struct and the
// store; it is never logged, never in describe(), never in an error message,
// and never put in a URL. Redirects are not followed.
//
// Clock: every response's Date header is compared with `clock->wall()`; one
// warning is logged when they differ by more than `max_clock_skew`.
//
// Thread safety: a store may be used from any number of threads; requests
// are serialised on its one connection.
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

// Counters a store updates as it works; pass one in the options to observe
// them (tests, benchmarks). All fields may be read from any thread.
struct WebDavStats {
  // HTTP requests sent, retries and answered authentication challenges included
  std::atomic<std::uint64_t> requests{0};
  std::atomic<std::uint64_t> new_connections{0};  // TCP connections opened (CURLINFO_NUM_CONNECTS)
  std::atomic<std::uint64_t> retries{0};          // attempts after the first, all requests
};

// basic: a user and a password, sent as HTTP Basic or Digest, whichever the
// server asks for (Basic from the first request over https; over plain http
// nothing until the server's first challenge; Digest for good once offered).
enum class WebDavAuth { none, basic, bearer };

struct WebDavStoreOptions {
  // http:// or https:// URL of the folder that holds the keys, without user
  // info, query or fragment; already percent-encoded. A trailing '/' is
  // optional. The folder is created on the first write when missing; its
  // parent must exist.
  std::string base_url;

  WebDavAuth auth = WebDavAuth::none;
  std::string user;    // the user of a password (basic)
  std::string secret;  // the password (or app token) or the bearer token; never logged

  std::filesystem::path ca_file;      // extra CA bundle (PEM) for TLS; empty: the system's
  std::filesystem::path client_cert;  // TLS client certificate (PEM); empty: none
  std::filesystem::path client_key;   // its private key (PEM); empty: in client_cert
  bool insecure = false;              // skip TLS verification (warned about at creation)

  // Upper bounds: a guard shortens retry_deadline and request_timeout to its
  // renewal period (Store::tune; StoreTimeouts has the rule).
  std::chrono::milliseconds connect_timeout{5000};   // per connection attempt
  std::chrono::milliseconds request_timeout{15000};  // per request, whole transfer
  std::chrono::milliseconds retry_deadline{20000};   // all attempts of one operation
  std::chrono::milliseconds initial_backoff{50};     // first retry delay (before jitter)
  std::chrono::milliseconds max_backoff{2000};       // retry delay cap

  // Warn (once) when the server's Date differs from clock->wall() by more;
  // a guard sets it to its max_skew (Store::tune).
  std::chrono::nanoseconds max_clock_skew = std::chrono::seconds(12);
  std::shared_ptr<Clock> clock;  // the system clock when null

  // Probe If-Match / If-None-Match on the first capabilities() call. When
  // false, versions and conditional writes are declared without asking: only
  // for servers known to honour them atomically.
  bool probe_capabilities = true;

  // Never write (status): capabilities() answers capabilities_not_probed() without
  // asking, and every write answers Errc::permission without a request.
  bool read_only = false;

  // The store's folder (the base URL) is created on the first write when
  // missing, but its parent must exist: a base whose parent is missing (a
  // misspelled space or path) is refused with Errc::invalid naming it, also
  // on servers that would create missing parents themselves. With
  // create_path, every missing folder of the path is created instead.
  bool create_path = false;

  std::shared_ptr<Logger> logger;      // null: discard
  std::shared_ptr<WebDavStats> stats;  // null: not counted
};

// Parses a store URL into options:
//   webdav://host[:port]/path              -> http://host[:port]/path
//   webdavs://host[:port]/path             -> https://host[:port]/path
//   opencloud://host[:port]/<space-id>[/folder]
//       -> https://host[:port]/dav/spaces/<space-id>/<folder>
//          (folder default ".instance-guard"; '$' in the id sent as %24)
// Credentials: a token (bearer) from options.token_file or
// INSTANCE_GUARD_TOKEN; a password or app token (basic) from
// options.password_file or INSTANCE_GUARD_PASSWORD with the user from
// options.user, INSTANCE_GUARD_USER or the URL's user name. Files win over
// the environment; a token and a password together are refused. A password
// in the URL is refused (Errc::invalid, pointing at the file and environment
// options); no message ever echoes it. Also takes ca_file, client_cert,
// client_key, insecure and logger from `options`. The timeouts and the skew
// threshold follow the guard that uses the store (Store::tune).
INSTANCE_EXPORT Result<WebDavStoreOptions> parse_webdav_url(std::string_view url,
                                                            const OpenOptions& options);

// Builds the store; sends no request (the server may be down at start: the
// first operation then fails with Errc::unavailable after its retries).
// Errc::invalid for a bad base URL, missing secret for the auth kind, or an
// unreadable ca_file, client_cert or client_key.
INSTANCE_EXPORT Result<std::shared_ptr<Store>> make_webdav_store(WebDavStoreOptions options);

// The webdav store family for open_store(): its schemes (webdav://, webdavs://, opencloud://). A
// program that links this store registers it with register_store_module()
// (instance/sdk/store_module.hpp); the loadable module answers the same object.
INSTANCE_EXPORT const StoreModule& webdav_store_module();

}  // namespace instance
